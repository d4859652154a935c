/// A value that only the loop's thread may use (a source, a connection's
/// state), carried through the `@Sendable` closures of `execute` and
/// `submit`: reading it on another thread while the loop runs is a
/// precondition failure, as for sources.
package struct SDEventLoopBound<Value>: @unchecked Sendable {
    package let loop: SDEventLoop
    private let stored: Value

    package init(_ value: Value, loop: SDEventLoop) {
        loop.assertConfined()
        self.loop = loop
        self.stored = value
    }

    package var value: Value {
        loop.assertConfined()
        return stored
    }
}
