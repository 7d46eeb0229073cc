import _SecurityKeyInternals
import SecurityKeys

/// The extension inputs of a ceremony routed through securitykeyd, written as the WebAuthn
/// JSON `extensions` member the daemon parses (WebAuthn L3 §5.1.8–9,
/// `AuthenticationExtensionsClientInputsJSON`).
extension SecurityKeyDaemonClient {
    /// The `extensions` member for a registration; nil when the request has none.
    static func extensionsJSON(
        _ request: SecurityKeyCredentialRegistrationRequest
    ) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        try refuseRawExtensions(request.additionalExtensionInputs.isEmpty)
        var out: [String: Any] = [:]
        if request.credentialProperties { out["credProps"] = true }
        if request.hmacCreateSecret { out["hmacCreateSecret"] = true }
        if request.minimumPINLength { out["minPinLength"] = true }
        if let blob = request.credentialBlob { out["credBlob"] = Base64URL.encode(blob) }
        if let protection = request.credentialProtection {
            out["credentialProtectionPolicy"] = protection.policy.rawValue
            out["enforceCredentialProtectionPolicy"] = protection.isEnforced
        }
        if let appID = request.appIDExclude { out["appidExclude"] = appID }
        if let prf = request.prf {
            out["prf"] = prf.inputValues.map { ["eval": values($0)] } ?? [String: Any]()
        }
        if let largeBlob = request.largeBlob { out["largeBlob"] = ["support": largeBlob.supportRequirement.rawValue] }
        return out.isEmpty ? nil : out
    }

    /// The `extensions` member for a sign-in; nil when the request has none.
    static func extensionsJSON(
        _ request: SecurityKeyCredentialAssertionRequest
    ) throws(SecurityKeyDaemonClientError) -> [String: Any]? {
        try refuseRawExtensions(request.additionalExtensionInputs.isEmpty)
        guard request.hmacGetSecret == nil else {
            throw SecurityKeyDaemonClientError(
                .notExpressible, "Raw hmac-secret salts have no WebAuthn JSON form; use the prf extension.",
                reason: .hmacSecretSalts)
        }
        var out: [String: Any] = [:]
        if let appID = request.appID { out["appid"] = appID }
        if request.getCredentialBlob { out["getCredBlob"] = true }
        if let prf = request.prf {
            var entry: [String: Any] = [:]
            if let eval = prf.inputValues { entry["eval"] = values(eval) }
            if let byCredential = prf.perCredentialInputValues {
                var map: [String: Any] = [:]
                for (id, input) in byCredential { map[Base64URL.encode(id)] = values(input) }
                entry["evalByCredential"] = map
            }
            out["prf"] = entry
        }
        switch request.largeBlob {
        case .read: out["largeBlob"] = ["read": true]
        case .write(let data): out["largeBlob"] = ["write": Base64URL.encode(data)]
        case nil: break
        }
        return out.isEmpty ? nil : out
    }

    /// Extension inputs given as raw CBOR have no WebAuthn JSON form.
    static func refuseRawExtensions(_ none: Bool) throws(SecurityKeyDaemonClientError) {
        guard none else {
            throw SecurityKeyDaemonClientError(
                .notExpressible, "Extension inputs given as raw CBOR have no WebAuthn JSON form.",
                reason: .rawExtensionInputs)
        }
    }

    static func values(_ input: SecurityKeyPRFAssertionInput.InputValues) -> [String: Any] {
        var entry = ["first": Base64URL.encode(input.saltInput1)]
        if let second = input.saltInput2 { entry["second"] = Base64URL.encode(second) }
        return entry
    }
}
