import Testing

/// Every integration test starts real processes (mediatord, components,
/// mediatorctl) on a fresh socket of its own. They run one at a time: the
/// timing bounds some of them check (a killed component's callers answered
/// within 1 s) must not depend on how busy the machine is with the others.
@Suite("Integration (real processes)", .serialized)
struct Integration {}
