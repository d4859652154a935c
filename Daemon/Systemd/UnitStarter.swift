import CSystemd
import Glibc

/// Starts and stops systemd units through the service manager's D-Bus API,
/// `org.freedesktop.systemd1.Manager.StartUnit(name, "replace")` and
/// `StopUnit(name, "replace")`, as dbus-broker does for activatable services.
///
/// Each call opens its own bus connection on a thread of its own (the call
/// blocks, up to `timeout`, and is rare: it happens when a component that
/// systemd runs is needed and not connected) and closes it afterwards.
///
/// Which bus: for the system manager, root uses systemd's private socket
/// (`/run/systemd/private`, as `systemctl` does; it needs neither a bus daemon
/// nor polkit) and falls back to the system bus; any other user goes through
/// the system bus, where systemd asks polkit whether the caller may manage
/// the unit (action `org.freedesktop.systemd1.manage-units`, with the details
/// `unit` and `verb`). The call never asks for interactive authorization. For
/// the user's own manager it is `$XDG_RUNTIME_DIR/systemd/private`, else the
/// session bus (no polkit: a user manages their own units).
package struct UnitStarter: Sendable {
    package enum Bus: Sendable {
        /// The system manager (system bus, or systemd's private socket as root).
        case system
        /// The calling user's own manager (its private socket, or the session bus).
        case user
    }

    package enum Method: String, Sendable {
        case start = "StartUnit"
        case stop = "StopUnit"
    }

    package struct Failure: Error, CustomStringConvertible, Sendable {
        /// The D-Bus error name, e.g. `org.freedesktop.systemd1.NoSuchUnit`,
        /// when systemd (or the bus) answered with an error.
        var errorName: String?
        package var description: String
    }

    package let bus: Bus
    package let timeout: Duration

    package init(bus: Bus = .system, timeout: Duration = .seconds(25)) {
        self.bus = bus
        self.timeout = timeout
    }

    /// Asks systemd to start `unit`. Nil when systemd queued the start job (the
    /// unit may still fail to start later), or a human-readable error.
    package func start(_ unit: String) async -> String? {
        if case .failure(let failure) = await call(.start, unit) { return failure.description }
        return nil
    }

    /// Asks systemd to stop `unit` (for the idle exit of a component that
    /// systemd runs). Nil when the stop job was queued, or a human-readable error.
    package func stop(_ unit: String) async -> String? {
        if case .failure(let failure) = await call(.stop, unit) { return failure.description }
        return nil
    }

    /// Calls `StartUnit` or `StopUnit` with mode "replace" on a thread of its
    /// own; the queued job's object path, e.g. `/org/freedesktop/systemd1/job/42`.
    package func call(_ method: Method, _ unit: String) async -> Result<String, Failure> {
        let bus = self.bus
        let components = timeout.components
        let microseconds = UInt64(max(components.seconds, 0)) * 1_000_000
            + UInt64(max(components.attoseconds, 0) / 1_000_000_000_000)
        return await onThreadOfItsOwn {
            Self.blockingCall(method, unit, bus: bus, timeoutMicroseconds: max(microseconds, 1))
        }
    }

    static func blockingCall(_ method: Method, _ unit: String, bus kind: Bus, timeoutMicroseconds: UInt64)
        -> Result<String, Failure>
    {
        let verb = method == .start ? "start" : "stop"
        let bus: OpaquePointer
        switch open(kind) {
        case .success(let opened): bus = opened
        case .failure(let failure):
            return .failure(Failure(errorName: nil, description: "cannot \(verb) \(unit): \(failure.description)"))
        }
        defer { sd_bus_flush_close_unref(bus) }
        _ = sd_bus_set_method_call_timeout(bus, timeoutMicroseconds)

        var job: UnsafeMutablePointer<CChar>?
        var errorName: UnsafeMutablePointer<CChar>?
        var errorMessage: UnsafeMutablePointer<CChar>?
        let result = mediator_manage_unit(bus, method.rawValue, unit, &job, &errorName, &errorMessage)
        defer {
            free(job)
            free(errorName)
            free(errorMessage)
        }
        guard result >= 0 else {
            let name = errorName.map { String(cString: $0) }
            let message = errorMessage.map { String(cString: $0) } ?? String(cString: strerror(-result))
            return .failure(Failure(errorName: name, description: "systemd did not \(verb) \(unit): \(message)"))
        }
        return .success(job.map { String(cString: $0) } ?? "")
    }

    /// A started connection to the manager.
    static func open(_ kind: Bus) -> Result<OpaquePointer, Failure> {
        var bus: OpaquePointer?
        switch kind {
        case .user:
            if let runtime = getenv("XDG_RUNTIME_DIR").map({ String(cString: $0) }), runtime.hasPrefix("/"),
                let privateBus = openPrivate("unix:path=\(runtime)/systemd/private")
            {
                return .success(privateBus)
            }
            let result = sd_bus_open_user(&bus)
            guard result >= 0, let bus else { return .failure(connectFailure("the user bus", result)) }
            return .success(bus)
        case .system:
            if geteuid() == 0, let privateBus = openPrivate(systemPrivateAddress) { return .success(privateBus) }
            let result = sd_bus_open_system(&bus)
            guard result >= 0, let bus else { return .failure(connectFailure("the system bus", result)) }
            return .success(bus)
        }
    }

    /// The system manager's own socket, which only root may use.
    static let systemPrivateAddress = "unix:path=/run/systemd/private"

    /// A manager's own socket (what `systemctl` uses when it can): the system
    /// manager's for root, `$XDG_RUNTIME_DIR/systemd/private` for a user's
    /// manager. Direct, with no bus daemon and no polkit in between. Nil when
    /// it is not there or refuses the connection.
    static func openPrivate(_ address: String) -> OpaquePointer? {
        var bus: OpaquePointer?
        guard sd_bus_new(&bus) >= 0, let bus else { return nil }
        guard sd_bus_set_address(bus, address) >= 0, sd_bus_start(bus) >= 0 else {
            sd_bus_flush_close_unref(bus)
            return nil
        }
        return bus
    }

    static func connectFailure(_ what: String, _ result: Int32) -> Failure {
        var text = "cannot connect to \(what): \(String(cString: strerror(-result)))"
        if what == "the system bus", -result == ENOENT {
            text += " (no D-Bus system bus is running: is dbus or dbus-broker installed and started?)"
        } else if what == "the user bus", -result == ENOENT || -result == ENOMEDIUM {
            text += " (no user manager or session bus: is this a user session with XDG_RUNTIME_DIR set?)"
        }
        return Failure(errorName: nil, description: text)
    }
}

/// Runs `body` on a new detached thread and returns its result, so that a
/// blocking call occupies neither an event loop nor a thread of Swift's
/// cooperative pool.
private func onThreadOfItsOwn<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
        let job = ThreadJob { continuation.resume(returning: body()) }
        let context = Unmanaged.passRetained(job).toOpaque()
        var thread = pthread_t()
        let created = pthread_create(
            &thread, nil,
            { context in
                guard let context else { return nil }
                Unmanaged<ThreadJob>.fromOpaque(context).takeRetainedValue().run()
                return nil
            }, context)
        if created == 0 {
            pthread_detach(thread)
        } else {
            // No thread to be had: run it here rather than not at all.
            Unmanaged<ThreadJob>.fromOpaque(context).takeRetainedValue().run()
        }
    }
}

private final class ThreadJob: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
