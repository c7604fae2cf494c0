//! The box's helper on its own, for a program that links codehands as a library and cannot
//! answer `__box` / `__box-init` itself: `codehands-box __box RUN_DIR/box.json`.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    match agent_box::dispatch(&args) {
        Some(code) => std::process::exit(code),
        None => {
            eprintln!("usage: codehands-box __box RUN_DIR/box.json (started by codehands)");
            std::process::exit(2);
        }
    }
}
