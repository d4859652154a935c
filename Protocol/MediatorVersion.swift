/// Mediator's release version: the daemon reports it in `hello`, and both
/// `mediatord --version` and `mediatorctl --version` print it. It lives here,
/// in the one module that every program shares, so the two cannot differ.
public enum MediatorVersion {
    /// The version of this build (semantic versioning).
    public static let current = "0.1.0"
}
