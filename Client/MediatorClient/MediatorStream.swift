/// The responses of a call with several of them (`more`), in order: what
/// ``MediatorClient/stream(target:action:params:timeout:)`` and the typed and
/// generated streams return.
///
/// Its failure type is `MediatorError`: after `for try await`, a `catch`
/// gets the wire code, message and data without a cast. Ending the
/// iteration early, or cancelling the iterating task, cancels the call
/// (`mediator/cancel`).
public struct MediatorStream<Element: Sendable>: AsyncSequence, Sendable {
    public typealias Failure = MediatorError

    private let base: AsyncThrowingStream<Element, any Error>

    init(_ base: AsyncThrowingStream<Element, any Error>) {
        self.base = base
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(base: base.makeAsyncIterator())
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        public typealias Failure = MediatorError

        var base: AsyncThrowingStream<Element, any Error>.AsyncIterator

        public mutating func next(isolation actor: isolated (any Actor)?) async throws(MediatorError) -> Element? {
            do {
                return try await base.next(isolation: actor)
            } catch {
                throw MediatorStream.mediatorError(error)
            }
        }

        public mutating func next() async throws(MediatorError) -> Element? {
            try await next(isolation: nil)
        }
    }

    /// What ends a stream is a `MediatorError` already (the library
    /// finishes its streams with one); anything else would be a bug, kept
    /// readable rather than lost.
    static func mediatorError(_ error: any Error) -> MediatorError {
        if let error = error as? MediatorError { return error }
        if error is CancellationError { return MediatorError(.cancelled, "the iterating task was cancelled") }
        return MediatorError(.internal, "the stream ended with \(String(describing: type(of: error))): \(error)")
    }
}
