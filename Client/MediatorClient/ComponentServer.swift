import NIOConcurrencyHelpers
import Logging
import MediatorProtocol
import Tracing

/// Serves one connection of a running ``Component`` (or of the components
/// of a ``ComponentConnection``, found by each call's target): a task per
/// incoming call, kept by the daemon's id so that `mediator.cancel` can
/// cancel it; a handler that cannot suspend is answered at once, without one.
final class ComponentServer: Sendable {
    private enum Key: Hashable, Sendable {
        case daemon(MessageID)
        case oneway(Int)
    }

    private struct Call: Sendable {
        var serial: Int
        /// Nil while the handler runs inline, before its first suspension
        /// (``HandlerExecutor/connection``): see ``dispatch(_:_:)``.
        var task: Task<Void, Never>?
        var responder: Responder
        /// Cancelled before `task` was known: cancel it once it is.
        var cancelled = false
    }

    private struct State: Sendable {
        var client: MediatorClient?
        var calls: [Key: Call] = [:]
        var nextSerial = 0
        var stopped = false
        /// The daemon sent `mediator.stop`, or the component is shutting
        /// down gracefully: run() returns instead of reconnecting.
        var leaving = false
        /// Tasks waiting for no call to be in flight (``waitUntilIdle()``), by number.
        var idleWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
    }

    var isLeaving: Bool { state.withLockedValue { $0.leaving } }

    /// The component that serves a call's target; nil: none on this connection.
    private let component: @Sendable (_ target: String) -> Component?
    /// The one component of `init(component:)`, read in place by each call:
    /// through `component`'s closure every call copied the whole
    /// `Component` (a retain and a release of each of its references,
    /// ~550 instructions a call).
    /// In a box: binding an optional `Component` copied it as well.
    private let onlyComponent: OnlyComponent?
    private final class OnlyComponent: Sendable {
        let component: Component
        init(_ component: Component) { self.component = component }
    }
    /// The components registered on this connection now, registered again
    /// on `mediator.reregister`.
    private let registered: @Sendable () -> [Component]
    private let logger: Logger
    private let state = NIOLockedValueBox(State())

    init(component: Component, logger: Logger) {
        // One target per connection: the daemon sends it nothing else.
        self.component = { _ in component }
        self.onlyComponent = OnlyComponent(component)
        self.registered = { [component] }
        self.logger = logger
    }

    init(
        components: @escaping @Sendable (_ target: String) -> Component?,
        registered: @escaping @Sendable () -> [Component], logger: Logger
    ) {
        self.component = components
        self.onlyComponent = nil
        self.registered = registered
        self.logger = logger
    }

    var hooks: InboundHooks {
        InboundHooks(
            request: { [self] request, connection in dispatch(request, connection) },
            cancel: { [self] id in cancel(id) },
            closed: { [self] in stop() },
            stopRequested: { [self] in
                state.withLockedValue { $0.leaving = true }
                state.withLockedValue { $0.client }?.connection.close()
            },
            reregisterRequested: { [self] in
                guard let client = state.withLockedValue({ $0.client }) else { return }
                Task { await registerAgain(on: client) }
            })
    }

    /// `mediator.reregister`: each target again on the same connection. A
    /// failure closes the connection: the reconnect registers on a new one.
    private func registerAgain(on client: MediatorClient) async {
        for component in registered() {
            do {
                _ = try await client.connection.call(
                    ProtocolConstants.daemonTarget, "register", params: component.registerParams, timeoutMs: nil)
                logger.info("registered \(component.target) again, as the daemon asked")
            } catch {
                logger.warning("cannot register \(component.target) again (\(error)); connecting again")
                client.connection.close()
                return
            }
        }
    }

    func attach(_ client: MediatorClient) {
        state.withLockedValue { $0.client = client }
    }

    /// Starts a task for one call, or answers it at once when its handler
    /// cannot suspend. On the connection's thread.
    private func dispatch(_ request: IncomingRequest, _ connection: Connection) {
        // One target per connection: the daemon sends it nothing else.
        if let onlyComponent {
            dispatch(request, onlyComponent.component, connection)
            return
        }
        guard let component = component(request.target) else {
            // Unregistered while the call was on its way.
            let error = MediatorError(.componentUnavailable, "\"\(request.target)\" is not served here any more")
            Responder.answer(request.id, .failure(error), on: connection)
            return
        }
        dispatch(request, component, connection)
    }

    private func dispatch(_ request: IncomingRequest, _ component: Component, _ connection: Connection) {
        if answerImmediately(request, component, connection) { return }
        let responder = Responder(id: request.id, more: request.more, connection: connection)
        // The call is entered before its task starts, and the task is started
        // outside the lock: with `.connection` the handler runs inline, on
        // this thread, up to its first suspension (an echo never suspends:
        // no job is scheduled at all), and may finish before the task value
        // is known.
        let reserved = state.withLockedValue { locked -> (key: Key, serial: Int, client: MediatorClient)? in
            guard !locked.stopped, let client = locked.client else { return nil }
            let serial = locked.nextSerial
            locked.nextSerial += 1
            let key: Key = request.id.map(Key.daemon) ?? .oneway(serial)
            if locked.calls[key] != nil {
                // The daemon keeps its ids unique among calls in flight.
                return nil
            }
            locked.calls[key] = Call(serial: serial, task: nil, responder: responder)
            return (key, serial, client)
        }
        guard let (key, serial, client) = reserved else {
            responder.finish(.failure(MediatorError(.componentUnavailable, "\"\(component.target)\" is not serving")))
            return
        }
        let body: @Sendable () async -> Void = { [self] in
            await execute(request, component, client: client, responder: responder)
            let idle = state.withLockedValue { state -> [CheckedContinuation<Void, Never>] in
                if state.calls[key]?.serial == serial { state.calls[key] = nil }
                guard state.calls.isEmpty, !state.idleWaiters.isEmpty else { return [] }
                defer { state.idleWaiters = [:] }
                return Array(state.idleWaiters.values)
            }
            for waiter in idle { waiter.resume() }
        }
        let task: Task<Void, Never>
        switch component.handlerExecutor {
        case .connection: task = Task.immediate(executorPreference: connection.executor, operation: body)
        case .concurrent: task = Task(operation: body)
        }
        let cancelNow = state.withLockedValue { locked -> Bool in
            guard locked.calls[key]?.serial == serial else { return false }  // already finished
            locked.calls[key]?.task = task
            return locked.calls[key]?.cancelled ?? false
        }
        if cancelNow { task.cancel() }
    }

    /// Runs a handler that cannot suspend right here, on the connection's
    /// thread, and answers: no task, no entry in `calls` (nothing can cancel
    /// it: the daemon's `mediator.cancel` is read after it returns). Only
    /// with ``Component/HandlerExecutor/connection``, no interceptors and
    /// tracing off: an interceptor may suspend, and a span, or the caller's
    /// `ServiceContext` that an instrument propagates, needs the task path. False when the call is not one of those.
    private func answerImmediately(_ request: IncomingRequest, _ component: Component, _ connection: Connection) -> Bool {
        guard case .connection = component.handlerExecutor, component.interceptors.isEmpty,
            let handler = immediateHandler(for: request.action, component, connection),
            let client = state.withLockedValue({ $0.stopped ? nil : $0.client }),
            tracingIsOff(client, connection)
        else { return false }
        // No Responder: a handler that cannot suspend sends no partials,
        // and nothing can suppress its answer before it returns.
        let context = CallContext(request: request, client: client, responder: nil)
        Responder.answer(request.id, outcome(context) { try handler(context) }, on: connection)
        return true
    }

    /// The component's handler for `action` when it cannot suspend; with
    /// one component per connection, remembered on the connection for the
    /// next request of the same action (the component never changes
    /// there; with several, the one serving a target may).
    private func immediateHandler(
        for action: String, _ component: Component, _ connection: Connection
    ) -> Component.ImmediateHandler? {
        guard onlyComponent != nil else { return component.immediateHandler(for: action) }
        if let last = connection.lastImmediateHandler, last.action == action { return last.handler }
        guard let handler = component.immediateHandler(for: action) else { return nil }
        connection.lastImmediateHandler = (action, handler)
        return handler
    }

    /// Whether tracing is off, asked once per read from the socket: the
    /// frames of one read are handled together, and a bootstrap racing
    /// with them may land before or after any of them anyway. (The
    /// task-local override of `withTracer` cannot apply here: this runs on
    /// the connection's thread, outside any task.)
    private func tracingIsOff(_ client: MediatorClient, _ connection: Connection) -> Bool {
        let batch = connection.readBatch.load(ordering: .relaxed)
        if connection.tracingOffInBatch.load(ordering: .relaxed) == batch { return true }
        guard case .off = client.tracing.mode else { return false }
        connection.tracingOffInBatch.store(batch, ordering: .relaxed)
        return true
    }

    private func execute(_ request: IncomingRequest, _ component: Component, client: MediatorClient, responder: Responder) async {
        let context = CallContext(request: request, client: client, responder: responder)
        let mode = client.tracing.mode
        let outcome: Result<Component.Answer, MediatorError>
        if case .off = mode, component.interceptors.isEmpty {
            outcome = await run(component, context)
        } else {
            outcome = await intercepted(component, context, mode: mode)
        }
        if responder.isSuppressed {
            logger.debug("call cancelled; no response sent", metadata: ["id": "\(request.id?.description ?? "-")"])
        }
        responder.finish(outcome)
    }

    /// The handler's outcome, its errors made `MediatorError`s.
    private func run(_ component: Component, _ context: CallContext) async -> Result<Component.Answer, MediatorError> {
        do {
            return .success(try await component.handle(context))
        } catch {
            return .failure(mediatorError(error, context))
        }
    }

    /// ``run(_:_:)`` inside the component's tracing (outermost, unless its
    /// interceptors place it) and interceptors.
    private func intercepted(
        _ component: Component, _ context: CallContext, mode: CallTracing.Mode
    ) async -> Result<Component.Answer, MediatorError> {
        let interceptors = component.interceptors
        let chain: @Sendable (CallContext) async throws -> ServerResponse = { context in
            try await ServerInterceptorChain.run(interceptors, context) { context in
                ServerResponse(try await component.handle(context))
            }
        }
        do {
            let response = component.placesTracing
                ? try await chain(context) : try await TracingServerInterceptor.intercept(context, mode: mode, next: chain)
            return .success(response.answer)
        } catch {
            return .failure(mediatorError(error, context))
        }
    }

    private func outcome(_ context: CallContext, _ body: () throws -> Component.Answer)
        -> Result<Component.Answer, MediatorError>
    {
        do {
            return .success(try body())
        } catch {
            return .failure(mediatorError(error, context))
        }
    }

    /// What a handler's error is answered with (``Component``'s rules). Any
    /// other error is also logged: the caller gets its type and description,
    /// the component's log says which call it ended.
    private func mediatorError(_ error: any Error, _ context: CallContext) -> MediatorError {
        let (answered, isOwn) = Self.mediatorError(error)
        if isOwn {
            logger.error(
                "handler failed",
                metadata: [
                    "action": "\(context.action)", "type": "\(String(describing: Swift.type(of: error)))", "error": "\(error)",
                ])
        }
        return answered
    }

    /// What a handler's (or a server interceptor's) error is answered with;
    /// `isOwn` when it is none of the library's kinds, but the handler's own.
    static func mediatorError(_ error: any Error) -> (error: MediatorError, isOwn: Bool) {
        switch error {
        case let error as MediatorError: return (error, false)
        case let error as any MediatorErrorConvertible: return (error.mediatorError, false)
        case is CancellationError: return (MediatorError(.cancelled, "the handler was cancelled"), false)
        default:
            let type = String(describing: Swift.type(of: error))
            return (MediatorError(.failed, "\(type): \(error)", data: ["type": .string(type)]), true)
        }
    }

    /// The component is leaving for good (graceful shutdown): the run loop
    /// returns once the connection closes instead of reconnecting.
    func leave() {
        state.withLockedValue { $0.leaving = true }
    }

    /// Returns once no call is being handled (at once when none is), when
    /// the server stops, or when the waiting task is cancelled.
    func waitUntilIdle() async {
        let number = state.withLockedValue { locked -> Int in
            locked.nextWaiter += 1
            return locked.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLockedValue { locked -> Bool in
                    if locked.calls.isEmpty || locked.stopped || Task.isCancelled { return true }
                    locked.idleWaiters[number] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            state.withLockedValue { $0.idleWaiters.removeValue(forKey: number) }?.resume()
        }
    }

    /// `mediator.cancel {id}`: cancels that call's task; nothing is answered.
    private func cancel(_ id: MessageID) {
        let call = state.withLockedValue { locked -> Call? in
            locked.calls[.daemon(id)]?.cancelled = true
            return locked.calls[.daemon(id)]
        }
        guard let call else {
            logger.debug("mediator.cancel for a call not running", metadata: ["id": "\(id)"])
            return
        }
        call.responder.suppress()
        call.task?.cancel()
    }

    /// The connection closed or the component stops: cancels every call
    /// still running (nothing can be answered any more) and lets go of the
    /// client. Idempotent.
    func stop() {
        let (calls, client, waiters) = state.withLockedValue { state in
            state.stopped = true
            for key in state.calls.keys { state.calls[key]?.cancelled = true }
            let calls = Array(state.calls.values)
            let client = state.client
            state.client = nil
            defer { state.idleWaiters = [:] }
            return (calls, client, Array(state.idleWaiters.values))
        }
        for call in calls {
            call.responder.suppress()
            call.task?.cancel()
        }
        for waiter in waiters { waiter.resume() }
        client?.connection.close()
    }
}
