#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// What mediatorctl asks of the terminal: whether there is one, and its width.
enum Terminal {
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) != 0 }

    /// The terminal's columns: `$COLUMNS` when it is a positive number (as
    /// for systemctl), else what the terminal says; nil when `fd` is not a
    /// terminal or its width is unknown (then nothing is cut).
    static func columns(_ fd: Int32) -> Int? {
        guard isTerminal(fd) else { return nil }
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 {
            return columns
        }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return nil }
        return Int(size.ws_col)
    }

    /// The terminal's rows: `$LINES` when it is a positive number, else what
    /// the terminal says; nil when unknown.
    static func rows(_ fd: Int32) -> Int? {
        guard isTerminal(fd) else { return nil }
        if let text = ProcessInfo.processInfo.environment["LINES"], let rows = Int(text), rows > 0 { return rows }
        var size = winsize()
        guard ioctl(fd, UInt(TIOCGWINSZ), &size) == 0, size.ws_row > 0 else { return nil }
        return Int(size.ws_row)
    }
}
