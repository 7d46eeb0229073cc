import CBOR

/// The parameters of one CTAP2 request or one nested map, with typed accessors that fail with
/// the status CTAP 2.1 §6 prescribes: a missing required member is
/// CTAP2_ERR_MISSING_PARAMETER, a member of the wrong type CTAP2_ERR_CBOR_UNEXPECTED_TYPE.
struct CTAPParameters {
    let map: CBORMap
    /// What the map is, for error messages ("makeCredential", "rp", "user").
    let context: String

    init(_ map: CBORMap, context: String) {
        self.map = map
        self.context = context
    }

    /// Decodes the parameters of a request with the strict CTAP2 decoder.
    init(request parameters: ArraySlice<UInt8>, context: String) throws(VirtualKeyError) {
        guard !parameters.isEmpty else {
            throw .rejected(.missingParameter, "\(context) has no parameters.")
        }
        let value: CBORValue
        do {
            value = try CBORDecoder(options: .ctap2).decode(parameters)
        } catch {
            throw .rejected(
                .invalidCBOR, "\(context) parameters are not CTAP2 canonical CBOR: \(error.message)")
        }
        guard let map = value.mapValue else {
            throw .rejected(.cborUnexpectedType, "\(context) parameters are not a CBOR map.")
        }
        self.init(map, context: context)
    }

    private func value<K: CustomStringConvertible>(_ key: K, _ cbor: CBORValue, required: Bool)
        throws(VirtualKeyError) -> CBORValue?
    {
        guard let v = map[cbor] else {
            if required { throw .rejected(.missingParameter, "\(context) lacks its required \(key) member.") }
            return nil
        }
        return v
    }

    private func typeError(_ key: some CustomStringConvertible, _ type: String) -> VirtualKeyError {
        .rejected(.cborUnexpectedType, "\(context) member \(key) is not \(type).")
    }

    func bytes(_ key: Int, required: Bool = false) throws(VirtualKeyError) -> [UInt8]? {
        guard let v = try value(key, .int(key), required: required) else { return nil }
        guard let b = v.bytesValue else { throw typeError(key, "a byte string") }
        return b
    }

    func text(_ key: Int, required: Bool = false) throws(VirtualKeyError) -> String? {
        guard let v = try value(key, .int(key), required: required) else { return nil }
        guard let s = v.stringValue else { throw typeError(key, "a text string") }
        return s
    }

    func nested(_ key: Int, _ name: String, required: Bool = false) throws(VirtualKeyError) -> CTAPParameters?
    {
        guard let v = try value(key, .int(key), required: required) else { return nil }
        guard let m = v.mapValue else { throw typeError(key, "a map") }
        return CTAPParameters(m, context: name)
    }

    func array(_ key: Int, required: Bool = false) throws(VirtualKeyError) -> [CBORValue]? {
        guard let v = try value(key, .int(key), required: required) else { return nil }
        guard let a = v.arrayValue else { throw typeError(key, "an array") }
        return a
    }

    func unsigned(_ key: Int, required: Bool = false) throws(VirtualKeyError) -> UInt64? {
        guard let v = try value(key, .int(key), required: required) else { return nil }
        guard let n = v.uint64Value else { throw typeError(key, "an unsigned integer") }
        return n
    }

    func integer(_ key: String, required: Bool = false) throws(VirtualKeyError) -> Int? {
        guard let v = try value(key, .textString(key), required: required) else { return nil }
        guard let n = v.intValue else { throw typeError(key, "an integer") }
        return n
    }

    func bytes(_ key: String, required: Bool = false) throws(VirtualKeyError) -> [UInt8]? {
        guard let v = try value(key, .textString(key), required: required) else { return nil }
        guard let b = v.bytesValue else { throw typeError(key, "a byte string") }
        return b
    }

    func text(_ key: String, required: Bool = false) throws(VirtualKeyError) -> String? {
        guard let v = try value(key, .textString(key), required: required) else { return nil }
        guard let s = v.stringValue else { throw typeError(key, "a text string") }
        return s
    }

    func bool(_ key: String) throws(VirtualKeyError) -> Bool? {
        guard let v = try value(key, .textString(key), required: false) else { return nil }
        guard let b = v.boolValue else { throw typeError(key, "a Boolean") }
        return b
    }
}

/// A PublicKeyCredentialDescriptor from an allow or exclude list (WebAuthn §5.8.3).
struct CredentialDescriptor {
    let type: String
    let id: [UInt8]

    /// Parses every descriptor of a list, checking types, the list length and ID lengths.
    static func list(
        _ items: [CBORValue], context: String, maxCount: Int, maxIDLength: Int
    ) throws(VirtualKeyError) -> [CredentialDescriptor] {
        guard items.count <= maxCount else {
            throw .rejected(
                .limitExceeded, "\(context) has \(items.count) credentials; at most \(maxCount) are accepted."
            )
        }
        var result: [CredentialDescriptor] = []
        for item in items {
            guard let m = item.mapValue else {
                throw .rejected(.cborUnexpectedType, "An entry of \(context) is not a map.")
            }
            let p = CTAPParameters(m, context: "a credential descriptor")
            guard let type = try p.text("type", required: true), let id = try p.bytes("id", required: true)
            else {
                throw .rejected(.missingParameter, "A credential descriptor lacks its type or id.")
            }
            guard id.count <= maxIDLength else {
                throw .rejected(
                    .invalidLength,
                    "A credential ID is \(id.count) bytes; at most \(maxIDLength) are accepted.")
            }
            result.append(CredentialDescriptor(type: type, id: id))
        }
        return result
    }
}
