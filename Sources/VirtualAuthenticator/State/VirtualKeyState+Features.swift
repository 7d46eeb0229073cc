import CBOR

// The state-file fields of fingerprints, credential extensions and large blobs, next to the
// rest of the state file's format in VirtualKeyState.swift (the `virtual-key-state` fuzz
// target's parser).

extension VirtualKeyState {
    enum FingerprintField {
        static let fingerprints = "fingerprints"
        static let id = "id"
        static let name = "name"
    }

    /// Adds the enrolled fingerprints to the state map (absent when none).
    func encodeFingerprints(into map: inout CBORMap) {
        guard !fingerprints.isEmpty else { return }
        map[FingerprintField.fingerprints] = .array(
            fingerprints.map { f in
                var m: CBORMap = [.textString(FingerprintField.id): .byteString(f.templateID)]
                if let name = f.friendlyName { m[.textString(FingerprintField.name)] = .textString(name) }
                return .map(m)
            })
    }

    /// Reads the enrolled fingerprints; files without them load with none.
    mutating func decodeFingerprints(_ map: CBORMap) throws(VirtualKeyError) {
        guard let v = map[FingerprintField.fingerprints] else { return }
        let damaged = VirtualKeyError(.stateFileCorrupt, "The state file's fingerprints field is damaged.")
        guard let list = v.arrayValue, list.count <= 100 else { throw damaged }
        fingerprints = []
        for item in list {
            guard let m = item.mapValue, let id = m[FingerprintField.id]?.bytesValue, (1...255).contains(id.count)
            else { throw damaged }
            var name: String?
            if let n = m[FingerprintField.name] {
                guard let text = n.stringValue else { throw damaged }
                name = text
            }
            fingerprints.append(FingerprintTemplateRecord(templateID: id, friendlyName: name))
        }
    }
}

extension VirtualKeyState {
    private enum LargeBlobField {
        static let array = "largeBlobArray"
        static let keys = "largeBlobKeys"
    }

    /// Writes the large-blob array and the largeBlobKeys of the credentials still stored.
    func encodeLargeBlobFields(into map: inout CBORMap) {
        if let largeBlobArray { map[.textString(LargeBlobField.array)] = .byteString(largeBlobArray) }
        let live = Set(credentials.map(\.id))
        var keys = CBORMap()
        for (id, key) in largeBlobKeys where live.contains(id) { keys[.byteString(id)] = .byteString(key) }
        if !keys.isEmpty { map[.textString(LargeBlobField.keys)] = .map(keys) }
    }

    /// Reads the large-blob fields; a file without them is a key with the initial array.
    mutating func decodeLargeBlobFields(_ map: CBORMap) throws(VirtualKeyError) {
        func damaged(_ name: String) -> VirtualKeyError {
            VirtualKeyError(.stateFileCorrupt, "The state file's \(name) field is damaged.")
        }
        if let v = map[.textString(LargeBlobField.array)] {
            guard let bytes = v.bytesValue, bytes.count >= 17 else { throw damaged(LargeBlobField.array) }
            largeBlobArray = bytes
        }
        if let v = map[.textString(LargeBlobField.keys)] {
            guard let keys = v.mapValue else { throw damaged(LargeBlobField.keys) }
            for entry in keys {
                guard let id = entry.key.bytesValue, let key = entry.value.bytesValue, key.count == 32 else {
                    throw damaged(LargeBlobField.keys)
                }
                largeBlobKeys[id] = key
            }
        }
    }
}

extension VirtualKeyState {
    private static let storedCredentialKeysField = "credentialKeys"
    /// The most RSA credential keys a state keeps (each about 1.2 kB); makeCredential answers
    /// KEY_STORE_FULL beyond it.
    static let maxStoredCredentialKeys = 256

    /// Writes the stored RSA credential keys (absent when none: older builds read the file).
    func encodeStoredCredentialKeys(into map: inout CBORMap) {
        guard !storedCredentialKeys.isEmpty else { return }
        var keys = CBORMap()
        for (seed, key) in storedCredentialKeys { keys[.byteString(seed)] = .byteString(key) }
        map[.textString(Self.storedCredentialKeysField)] = .map(keys)
    }

    /// Reads the stored RSA credential keys; files written before RS256 load with none.
    mutating func decodeStoredCredentialKeys(_ map: CBORMap) throws(VirtualKeyError) {
        guard let v = map[.textString(Self.storedCredentialKeysField)] else { return }
        let damaged = VirtualKeyError(.stateFileCorrupt, "The state file's credentialKeys field is damaged.")
        guard let keys = v.mapValue, keys.count <= Self.maxStoredCredentialKeys else { throw damaged }
        for entry in keys {
            // A 4096-bit PKCS #1 key is under 2.5 kB; nothing this key writes comes near 8 kB.
            guard let seed = entry.key.bytesValue, seed.count == CredentialPrivateKey.seedLength,
                let key = entry.value.bytesValue, (1...8192).contains(key.count)
            else { throw damaged }
            storedCredentialKeys[seed] = key
        }
    }
}

extension DiscoverableCredential {
    /// State-file fields of the extensions; files written before them load as credProtect 1,
    /// no hmac-secret and no credBlob.
    private enum ExtensionField {
        static let credProtect = "credProtect"
        static let credRandomWithUV = "credRandomWithUV"
        static let credRandomWithoutUV = "credRandomWithoutUV"
        static let credBlob = "credBlob"
        static let thirdPartyPayment = "thirdPartyPayment"
    }

    func encodeExtensionFields(into map: inout CBORMap) {
        if credProtect != .optional {
            map[ExtensionField.credProtect] = .int(Int(credProtect.rawValue))
        }
        if let credRandoms {
            map[ExtensionField.credRandomWithUV] = .byteString(credRandoms.withUV)
            map[ExtensionField.credRandomWithoutUV] = .byteString(credRandoms.withoutUV)
        }
        if let credBlob { map[ExtensionField.credBlob] = .byteString(credBlob) }
        if thirdPartyPayment { map[ExtensionField.thirdPartyPayment] = true }
    }

    mutating func decodeExtensionFields(_ map: CBORMap) throws(VirtualKeyError) {
        func damaged(_ name: String) -> VirtualKeyError {
            VirtualKeyError(.stateFileCorrupt, "A stored credential's \(name) field is damaged.")
        }
        if let v = map[ExtensionField.credProtect] {
            guard let n = v.uint64Value, n <= UInt64(UInt8.max),
                let level = CredProtectLevel(rawValue: UInt8(n))
            else { throw damaged(ExtensionField.credProtect) }
            credProtect = level
        }
        let withUV = map[ExtensionField.credRandomWithUV]
        let withoutUV = map[ExtensionField.credRandomWithoutUV]
        if withUV != nil || withoutUV != nil {
            guard let a = withUV?.bytesValue, a.count == CredRandoms.length, let b = withoutUV?.bytesValue,
                b.count == CredRandoms.length
            else { throw damaged("credRandom") }
            credRandoms = CredRandoms(withUV: a, withoutUV: b)
        }
        if let v = map[ExtensionField.credBlob] {
            // A real blob is a few dozen bytes; cap what a damaged file can make us keep.
            guard let blob = v.bytesValue, blob.count <= 4096 else { throw damaged(ExtensionField.credBlob) }
            credBlob = blob
        }
        if let v = map[ExtensionField.thirdPartyPayment] {
            guard let flag = v.boolValue else { throw damaged(ExtensionField.thirdPartyPayment) }
            thirdPartyPayment = flag
        }
    }
}

extension VirtualKeyState {
    private enum PersistentTokenField {
        static let token = "persistentPinUvAuthToken"
    }

    /// Writes the persistentPinUvAuthToken, when the key has made one.
    func encodePersistentTokenField(into map: inout CBORMap) {
        if let persistentPINUVAuthToken {
            map[.textString(PersistentTokenField.token)] = .byteString(persistentPINUVAuthToken)
        }
    }

    /// Reads the persistentPinUvAuthToken; a file without it is a key that has made none yet.
    mutating func decodePersistentTokenField(_ map: CBORMap) throws(VirtualKeyError) {
        guard let v = map[.textString(PersistentTokenField.token)] else { return }
        guard let token = v.bytesValue, token.count == PINProtocol.tokenLength else {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's persistentPinUvAuthToken field is damaged.")
        }
        persistentPINUVAuthToken = token
    }
}
