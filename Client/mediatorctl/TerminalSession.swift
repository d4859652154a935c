#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import NIOConcurrencyHelpers

/// A full-screen session on the terminal, as `top` and `systemd-cgtop`
/// hold one: the alternate screen, no cursor, and keys read one at a
/// time without echo. ``leave()`` puts everything back; it is safe to
/// call more than once and from the SIGINT/SIGTERM handler.
enum TerminalSession {
    private static let lock = NIOLock()
    nonisolated(unsafe) private static var saved: termios?
    nonisolated(unsafe) private static var active = false

    static func enter() {
        lock.lock()
        defer { lock.unlock() }
        guard !active else { return }
        active = true
        if Terminal.isTerminal(STDIN_FILENO) {
            var settings = termios()
            if tcgetattr(STDIN_FILENO, &settings) == 0 {
                saved = settings
                // Keys arrive as typed, unechoed; output processing (LF as CR LF) stays on.
                settings.c_lflag &= ~tcflag_t(ICANON | ECHO)
                withUnsafeMutableBytes(of: &settings.c_cc) { cc in
                    cc[Int(VMIN)] = 1
                    cc[Int(VTIME)] = 0
                }
                tcsetattr(STDIN_FILENO, TCSANOW, &settings)
            }
        }
        Output.write(STDOUT_FILENO, "\u{1B}[?1049h\u{1B}[?25l")
    }

    static func leave() {
        lock.lock()
        defer { lock.unlock() }
        guard active else { return }
        active = false
        if var settings = saved { tcsetattr(STDIN_FILENO, TCSANOW, &settings) }
        saved = nil
        Output.write(STDOUT_FILENO, "\u{1B}[?25h\u{1B}[?1049l")
    }

    /// Clears the screen and writes `lines` from the top left.
    static func draw(_ lines: [String]) {
        Output.write(STDOUT_FILENO, "\u{1B}[H\u{1B}[2J" + lines.joined(separator: "\n"))
    }

    /// Each byte typed, read on a thread of its own; the stream ends when stdin does.
    static func keys() -> AsyncStream<UInt8> {
        AsyncStream { continuation in
            DispatchQueue.global().async {
                var byte: UInt8 = 0
                while read(STDIN_FILENO, &byte, 1) == 1 { continuation.yield(byte) }
                continuation.finish()
            }
        }
    }
}
