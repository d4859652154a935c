/// The daemon's version, reported by `hello` and `--version`.
public enum MediatorVersion {
    public static let current = "0.1.0"
}
