#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// A unit's last journal lines, as `systemctl status` shows them: by
/// running `journalctl -u UNIT -n N --no-pager -o short-iso --quiet` (quiet:
/// without `-- No entries --` and the hint about journal access, which
/// systemctl status does not show either). Nothing when journalctl is not
/// there, fails, or does not finish within the bound.
enum Journal {
    /// How many lines `status` shows unless `--lines` says otherwise.
    static let defaultLines = 10

    /// The arguments of journalctl; `--user` for a unit of the user's
    /// service manager (mediatorctl `--user`).
    static func arguments(unit: String, lines: Int, user: Bool) -> [String] {
        (user ? ["--user"] : []) + ["-u", unit, "-n", String(lines), "--no-pager", "-o", "short-iso", "--quiet"]
    }

    /// `journalctl` in `$PATH`, else nil.
    static func program(path: String?) -> String? {
        let folders = (path ?? "/usr/bin:/bin").split(separator: ":", omittingEmptySubsequences: true)
        return folders.map { "\($0)/journalctl" }.first { access($0, X_OK) == 0 }
    }

    static func lines(unit: String, count: Int, user: Bool, within seconds: Double) async -> [String] {
        let environment = ProcessInfo.processInfo.environment
        guard count > 0, let program = program(path: environment["PATH"]) else { return [] }
        let run = ExecRun(path: program, arguments: arguments(unit: unit, lines: count, user: user), environment: environment)
        // A journalctl that does not finish in time is stopped (ExecRun stops its group when cancelled).
        guard let outcome = try? await Deadline.run(seconds: seconds, { try await run.run() }),
            outcome.termination == .exited(0)
        else { return [] }
        var lines = String(decoding: outcome.stdout, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
        if lines.last == "" { lines.removeLast() }
        return lines
    }
}
