import CNats

/// A subscription made by ``NATSConnection/subscribe(_:queue:handler:)``.
/// Unsubscribed by ``unsubscribe()`` or when this object goes.
package final class NATSSubscription: @unchecked Sendable {
    // @unchecked: libnats's subscription is thread-safe; the rest is immutable.
    private let subscription: OpaquePointer
    package let subject: String
    /// Keeps the connection (and its C object) alive while this exists.
    private let owner: NATSConnection

    /// The handler, in a class so that the C callback can reach it; freed by
    /// libnats's completion callback, after the last delivery.
    final class HandlerBox: @unchecked Sendable {
        let handler: @Sendable (NATSMessage) -> Void
        init(_ handler: @escaping @Sendable (NATSMessage) -> Void) { self.handler = handler }
    }

    init(_ subscription: OpaquePointer, subject: String, owner: NATSConnection) {
        self.subscription = subscription
        self.subject = subject
        self.owner = owner
    }

    deinit {
        libnats.natsSubscription_Destroy(subscription)
    }

    /// Stops deliveries (those already under way finish). Idempotent.
    package func unsubscribe() {
        _ = libnats.natsSubscription_Unsubscribe(subscription)
    }

    package var isValid: Bool { libnats.natsSubscription_IsValid(subscription) }
}
