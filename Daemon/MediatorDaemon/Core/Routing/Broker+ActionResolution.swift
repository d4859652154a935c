import MediatorProtocol
import NIOCore

/// Which action a call reaches among a target's specs (or its `notFound`
/// fallback), with the URL guard and the params schema checked: contract
/// section 4, steps 2 to 4.
extension Broker {
    /// The action a call reaches, the params to forward, and the schema its
    /// results must match (a reference, nil for most actions).
    struct ResolvedAction {
        var action: String
        var params: ByteBuffer?
        var result: Schema?
    }

    /// The action a call reaches among a target's specs (or `notFound`), with
    /// the params to forward; checks the URL guard and the params schema.
    func resolveAction(_ request: RouteRequest, specs: [String: ActionSpec]) -> Result<ResolvedAction, MediatorError> {
        resolveAction(request, found: specs[request.action]?.routingFacts, specs: specs)
    }

    /// The same, with what routing reads of the spec of the action the
    /// call names already found (nil when the target declares no such action).
    func resolveAction(
        _ request: RouteRequest, found: ActionSpec.RoutingFacts?, specs: [String: ActionSpec]
    ) -> Result<ResolvedAction, MediatorError> {
        // Built only when it is the answer: its message is an interpolation.
        var forbiddenByURL: MediatorError {
            MediatorError(.forbidden, "action \"\(request.target)/\(request.action)\" cannot be reached through a URL")
        }
        if let spec = found {
            // The spec itself only for a call through a URL (rare): whether it
            // may be reached reads its name, some 140 instructions.
            if request.viaURL, specs[request.action]?.reachableByURL != true { return .failure(forbiddenByURL) }
            if request.action == "notFound", let refusal = directNotFoundRefusal(request, specs: specs) {
                return .failure(refusal)
            }
            if let schema = spec.params {
                let value = request.params.map(decode) ?? .object([:])
                if let mismatch = schema.validate(value ?? .null, fds: request.fds) { return .failure(mismatch) }
            }
            return .success(ResolvedAction(action: request.action, params: request.params, result: spec.result))
        }
        if let fallback = specs["notFound"] {
            if request.viaURL, !fallback.reachableByURL || request.action.hasPrefix("native") { return .failure(forbiddenByURL) }
            return .success(ResolvedAction(
                action: "notFound", params: writer.notFoundParams(action: request.action, params: request.params),
                result: fallback.result))
        }
        return .failure(MediatorError(.actionNotFound, "target \"\(request.target)\" has no action \"\(request.action)\""))
    }

    /// A peer calling `notFound` itself must not reach the fallback with
    /// what the daemon would never send it: `notFound` is the daemon's to
    /// call. The call must look exactly like one the daemon makes (an
    /// `action` that follows the name rules and that the target does not
    /// declare, `params` an object when present), and the URL guard applies
    /// to the action it carries, as if the URL had named it.
    func directNotFoundRefusal(_ request: RouteRequest, specs: [String: ActionSpec]) -> MediatorError? {
        guard let params = (request.params.map(decode) ?? .object([:]))?.objectValue else {
            return MediatorError(.invalidParams, "params of \"notFound\" must be an object")
        }
        guard let inner = params["action"]?.stringValue, NameRules.isValidAction(inner) else {
            return MediatorError(.invalidParams, "params.action of \"notFound\" must be an action name")
        }
        guard specs[inner] == nil else {
            return MediatorError(
                .invalidParams, "params.action \"\(inner)\" is declared by \"\(request.target)\": call it directly, not through \"notFound\"")
        }
        if let carried = params["params"], carried.objectValue == nil {
            return MediatorError(.invalidParams, "params.params of \"notFound\" must be an object")
        }
        if request.viaURL, inner.hasPrefix("native") {
            return MediatorError(.forbidden, "action \"\(request.target)/\(inner)\" cannot be reached through a URL")
        }
        return nil
    }
}

extension ActionSpec {
    /// What routing reads of a spec on every call: its schemas (nil for most actions).
    struct RoutingFacts {
        var params: Schema?
        var result: Schema?
    }

    var routingFacts: RoutingFacts { RoutingFacts(params: params, result: result) }
}
