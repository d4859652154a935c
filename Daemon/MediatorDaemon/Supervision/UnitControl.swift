/// Starting and stopping systemd units, for components whose manifest names
/// a unit. The launcher provides it (over sd-bus); the broker only asks.
package struct UnitControl: Sendable {
    /// Nil when the start job was queued, else why not.
    package var start: @Sendable (String) async -> String?
    package var stop: @Sendable (String) async -> String?

    package init(start: @escaping @Sendable (String) async -> String?, stop: @escaping @Sendable (String) async -> String?) {
        self.start = start
        self.stop = stop
    }
}
