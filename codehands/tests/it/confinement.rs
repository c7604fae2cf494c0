//! The facade's confinement (the local box and the Docker engine, each session's engine
//! choosing) under runner-testkit's `Confinement` suite; its local boxes are started for real.

use runner_contract::Engine;
use runner_testkit::confine::{self, Capabilities};

use crate::support::World;

#[test]
fn the_facades_boxes_keep_every_confinements_promises() {
    let world = World::demo();
    let setup = world.setup(world.settings());
    let boxes = codehands::confinement(&setup).expect("this build boxes agents");
    let runs_shell = match boxes.available_on(Engine::Local) {
        Ok(()) => vec![Engine::Local],
        Err(why) => {
            runner_testkit::skip(&format!("no local box on this machine: {why}"));
            Vec::new()
        }
    };
    confine::all(
        &*boxes,
        &Capabilities {
            engines: vec![Engine::Local, Engine::Docker, Engine::Swarm],
            runs_shell,
        },
    );
}
