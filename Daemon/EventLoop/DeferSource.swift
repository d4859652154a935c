import CSystemd

/// A call on the loop's thread without a file descriptor or a deadline:
/// `addDefer` runs it once at the next iteration (set `.oneShot` again to
/// repeat), `addPost` after every iteration that dispatched another source
/// (e.g. to flush what the handlers of that iteration queued).
package final class DeferSource: EventSource {
    package typealias Handler = (DeferSource) -> Void

    private let handler: Handler

    fileprivate init(handler: @escaping Handler) {
        self.handler = handler
    }

    fileprivate func dispatch() { handler(self) }
}

extension SDEventLoop {
    package func addDefer(handler: @escaping DeferSource.Handler) throws(SDEventError) -> DeferSource {
        try addDeferSource(post: false, handler: handler)
    }

    package func addPost(handler: @escaping DeferSource.Handler) throws(SDEventError) -> DeferSource {
        try addDeferSource(post: true, handler: handler)
    }

    private func addDeferSource(post: Bool, handler: @escaping DeferSource.Handler) throws(SDEventError) -> DeferSource {
        assertConfined()
        let source = DeferSource(handler: handler)
        let callback: sd_event_handler_t = { _, userdata in
            SourceBox<DeferSource>.source(of: userdata)?.dispatch()
            return 0
        }
        try EventSource.register(source, census: census, post ? "sd_event_add_post" : "sd_event_add_defer") {
            pointer, userdata in
            post
                ? sd_event_add_post(event, pointer, callback, userdata)
                : sd_event_add_defer(event, pointer, callback, userdata)
        }
        return source
    }
}
