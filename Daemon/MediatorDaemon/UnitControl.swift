/// Starting and stopping systemd units, for components whose manifest names
/// a unit. The launcher provides it (over sd-bus); the broker only asks.
public struct UnitControl: Sendable {
    /// Nil when the start job was queued, else why not.
    public var start: @Sendable (String) async -> String?
    public var stop: @Sendable (String) async -> String?

    public init(start: @escaping @Sendable (String) async -> String?, stop: @escaping @Sendable (String) async -> String?) {
        self.start = start
        self.stop = stop
    }
}
