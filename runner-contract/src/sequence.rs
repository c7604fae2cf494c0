//! Hands out events with the next seq of a session.

use crate::event::{Event, EventBody};
use crate::ids::SessionId;

/// Numbers a session's events 1, 2, 3 …; start it from a record's `last_seq` to continue after a resume.
#[derive(Debug, Clone)]
pub struct EventSequence {
    session_id: SessionId,
    last: u64,
}

impl EventSequence {
    /// A sequence whose first event gets seq 1.
    pub fn new(session_id: SessionId) -> Self {
        Self::continuing(session_id, 0)
    }

    /// A sequence whose first event gets `last_seq + 1`.
    pub fn continuing(session_id: SessionId, last_seq: u64) -> Self {
        Self {
            session_id,
            last: last_seq,
        }
    }

    /// Wraps `body` into an event with the next seq and the current time.
    pub fn next(&mut self, body: EventBody, raw: Option<String>) -> Event {
        self.last += 1;
        Event {
            session_id: self.session_id,
            seq: self.last,
            ts: crate::now_rfc3339(),
            body,
            raw,
        }
    }

    /// The seq of the last event handed out (0 before the first).
    pub fn last_seq(&self) -> u64 {
        self.last
    }

    /// The session this sequence numbers.
    pub fn session_id(&self) -> SessionId {
        self.session_id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Message, TaskStopped};

    #[test]
    fn counts_from_one_and_continues() {
        let id = SessionId::new_random();
        let mut seq = EventSequence::new(id);
        let a = seq.next(EventBody::Message(Message::default()), None);
        let b = seq.next(EventBody::TaskStopped(TaskStopped::default()), None);
        assert_eq!((a.seq, b.seq), (1, 2));
        let mut resumed = EventSequence::continuing(id, seq.last_seq());
        assert_eq!(
            resumed
                .next(EventBody::Message(Message::default()), None)
                .seq,
            3
        );
    }
}
