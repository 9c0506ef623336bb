//! One virtual router (VRID) of one node: the RFC 5798 state machine.
