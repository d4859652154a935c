import Dispatch
import Foundation

/// Signal handling outside `main.swift`, whose top-level code runs on the
/// main actor: a handler closure written there would be isolated to it and
/// trap when dispatch runs it on another queue.
enum Shutdown {
    /// Runs `action` on each of `signals` instead of the default action.
    /// Keep the returned sources alive.
    static func onSignals(_ signals: [Int32], _ action: @escaping @Sendable () -> Void) -> [any DispatchSourceSignal] {
        signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler(handler: action)
            source.resume()
            return source
        }
    }
}
