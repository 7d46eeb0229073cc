import _SecurityKeyInternals
import CTAP2

/// The `extensions` member of WebAuthn JSON options (`AuthenticationExtensionsClientInputsJSON`,
/// WebAuthn L3 §5.1.8–9): each client extension input by identifier, type-checked for the
/// extensions this library knows, kept as parsed JSON.
///
/// Unknown extensions are ignored, as WebAuthn L3 §9 tells clients to do.
public struct WebAuthnExtensionInputsJSON: Hashable, Sendable {
    /// The inputs by identifier, as parsed (`appid`, `credProps`, `prf`, `credBlob`, ...).
    public var inputs: [String: JSONNode]

    /// No extensions.
    public init() { inputs = [:] }

    /// The identifiers of the client extensions `apply(to:)` maps to a request, as
    /// `getClientCapabilities` names them after `extension:` (WebAuthn L3 §5.1.7):
    /// credentialProtectionPolicy is credProtect's input, getCredBlob credBlob's at sign-in.
    public static let implementedExtensions = [
        "appid", "appidExclude", "credBlob", "credProps", "credProtect", "getCredBlob", "hmacCreateSecret",
        "largeBlob", "minPinLength", "prf",
    ]

    /// Reads and type-checks `extensions` (nil: none given).
    init(_ object: JSONMembers?) throws(WebAuthnJSONError) {
        inputs = [:]
        guard let object else { return }
        for (name, value) in object.members {
            let path = object.memberPath(name)
            switch name {
            case "appid", "appidExclude":
                guard case .string = value else { throw JSONMembers.wrongType(path, "a string", value) }
            case "credProps", "hmacCreateSecret", "minPinLength", "getCredBlob":
                guard case .bool = value else { throw JSONMembers.wrongType(path, "a boolean", value) }
            case "credBlob":
                _ = try JSONMembers.bytes(value, path: path, sizes: 1...1024)
            case "credentialProtectionPolicy":
                guard case .string = value else { throw JSONMembers.wrongType(path, "a string", value) }
            case "enforceCredentialProtectionPolicy":
                guard case .bool = value else { throw JSONMembers.wrongType(path, "a boolean", value) }
            case "prf", "largeBlob":
                _ = try JSONMembers(value, path: path)
            default: break
            }
            inputs[name] = value
        }
    }

    // MARK: Mapping to the provider's request

    /// The extensions' inputs on `request` (WebAuthn L3 §10): credProps, hmacCreateSecret,
    /// minPinLength, credBlob, credentialProtectionPolicy (+ enforce), prf (`eval` only: there
    /// is no credential to evaluate by yet), largeBlob (`support`), appidExclude.
    func apply(to request: inout SecurityKeyCredentialRegistrationRequest) throws(SecurityKeyError) {
        do throws(WebAuthnJSONError) {
            if case .bool(true) = inputs["credProps"] { request.credentialProperties = true }
            if case .bool(true) = inputs["hmacCreateSecret"] { request.hmacCreateSecret = true }
            if case .bool(true) = inputs["minPinLength"] { request.minimumPINLength = true }
            if let blob = inputs["credBlob"] {
                request.credentialBlob = try JSONMembers.bytes(blob, path: "extensions.credBlob", sizes: 1...1024)
            }
            if case .string(let policy) = inputs["credentialProtectionPolicy"] {
                guard CredentialProtectionPolicy(webAuthnName: policy) != nil else {
                    throw JSONMembers.invalid(
                        "extensions.credentialProtectionPolicy", "is not a credential protection policy")
                }
                var enforced = false
                if case .bool(let value) = inputs["enforceCredentialProtectionPolicy"] { enforced = value }
                request.credentialProtection = SecurityKeyCredentialProtection(
                    policy: .init(rawValue: policy), isEnforced: enforced)
            }
            if case .string(let appID) = inputs["appidExclude"] { request.appIDExclude = appID }
            if let prf = inputs["prf"] {
                let members = try JSONMembers(prf, path: "extensions.prf")
                if members.optional("evalByCredential") != nil {
                    throw JSONMembers.invalid("extensions.prf.evalByCredential", "is not allowed at registration")
                }
                if let eval = try members.object("eval") {
                    request.prf = SecurityKeyPRFRegistrationInput(inputValues: try Self.prfValues(eval))
                } else {
                    request.prf = .checkForSupport
                }
            }
            if let largeBlob = inputs["largeBlob"] {
                let members = try JSONMembers(largeBlob, path: "extensions.largeBlob")
                if members.optional("read") != nil || members.optional("write") != nil {
                    throw JSONMembers.invalid("extensions.largeBlob", "takes only support at registration")
                }
                let support = try members.string("support") ?? "preferred"
                guard let requirement = SecurityKeyLargeBlobRegistrationInput.SupportRequirement(rawValue: support) else {
                    throw JSONMembers.invalid("extensions.largeBlob.support", "must be required or preferred")
                }
                request.largeBlob = SecurityKeyLargeBlobRegistrationInput(supportRequirement: requirement)
            }
        } catch {
            throw SecurityKeyError(error)
        }
    }

    /// The extensions' inputs on `request`: appid, getCredBlob, prf (`eval` and
    /// `evalByCredential`, keyed by base64url credential IDs), largeBlob (`read` or `write`).
    func apply(to request: inout SecurityKeyCredentialAssertionRequest) throws(SecurityKeyError) {
        do throws(WebAuthnJSONError) {
            if case .string(let appID) = inputs["appid"] { request.appID = appID }
            if case .bool(true) = inputs["getCredBlob"] { request.getCredentialBlob = true }
            if let prf = inputs["prf"] {
                let members = try JSONMembers(prf, path: "extensions.prf")
                let eval = try members.object("eval").map(Self.prfValues)
                var byCredential: [[UInt8]: SecurityKeyPRFAssertionInput.InputValues]?
                if let map = try members.object("evalByCredential") {
                    var values: [[UInt8]: SecurityKeyPRFAssertionInput.InputValues] = [:]
                    for (id, node) in map.members {
                        let path = map.memberPath(id)
                        guard let credentialID = Base64URL.decode(id), !credentialID.isEmpty else {
                            throw JSONMembers.invalid(path, "is not a base64url credential ID")
                        }
                        values[credentialID] = try Self.prfValues(try JSONMembers(node, path: path))
                    }
                    byCredential = values
                }
                request.prf = SecurityKeyPRFAssertionInput(inputValues: eval, perCredentialInputValues: byCredential)
            }
            if let largeBlob = inputs["largeBlob"] {
                let members = try JSONMembers(largeBlob, path: "extensions.largeBlob")
                let read = try members.bool("read") ?? false
                let write = try members.bytes("write", sizes: 0...(1 << 20))
                if read && write != nil {
                    throw JSONMembers.invalid("extensions.largeBlob", "takes read or write, not both")
                }
                if members.optional("support") != nil {
                    throw JSONMembers.invalid("extensions.largeBlob.support", "is for registration only")
                }
                if let write { request.largeBlob = .write(write) } else if read { request.largeBlob = .read }
            }
        } catch {
            throw SecurityKeyError(error)
        }
    }

    /// `{first, second?}` of a PRF input (AuthenticationExtensionsPRFValuesJSON), base64url.
    static func prfValues(_ object: JSONMembers) throws(WebAuthnJSONError) -> SecurityKeyPRFAssertionInput.InputValues {
        let first = try object.requiredBytes("first", sizes: 0...1024)
        let second = try object.bytes("second", sizes: 0...1024)
        return SecurityKeyPRFAssertionInput.InputValues(saltInput1: first, saltInput2: second)
    }
}
