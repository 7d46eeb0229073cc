import _SecurityKeyInternals
import Crypto

// Loading a key's state file: a file on disk is untrusted bytes (another process, a CI
// fixture, a damaged disk), so this file and VirtualKeyState*.swift form the parser the
// `virtual-key-state` fuzz target measures (Docs/Fuzzing.md).

extension VirtualKey {
    /// What a key starts from: its state, read from the file or made new, and the keys in it.
    struct LoadedState {
        var state: VirtualKeyState
        var file: VirtualKeyStateFile?
        var lock: VirtualKeyStateLock?
        var attestationKey: P256.Signing.PrivateKey
        /// Set only when the configuration offers enterprise attestation.
        var enterpriseAttestationKey: P256.Signing.PrivateKey?
    }

    /// Reads `stateFile` (or makes a new state, saved there when it is read-write), applies the
    /// configured AAGUID, enterprise attestation identity and PIN, and checks the keys in it.
    static func loadState(
        configuration: Configuration, stateFile: String?, access: StateFileAccess
    ) throws(VirtualKeyError) -> LoadedState {
        let file = stateFile.map { VirtualKeyStateFile(path: $0) }
        // Taken before reading, so no other writer can replace the file between read and use.
        let lock = access == .readWrite ? try file?.lock() : nil
        var loaded: VirtualKeyState
        if let file, let bytes = try file.read() {
            loaded = try VirtualKeyState(decoding: bytes)
            if let wanted = configuration.aaguid, wanted != loaded.aaguid {
                throw VirtualKeyError(
                    .stateMismatch, "The state file \(file.path) belongs to a key with another AAGUID.")
            }
        } else if let file, access == .readOnly {
            throw VirtualKeyError(.stateFileIO, "The read-only state file \(file.path) does not exist.")
        } else {
            loaded = try AttestationIdentity.newState(
                aaguid: configuration.aaguid ?? SystemRandom.bytes(16),
                enterpriseAttestation: configuration.supportsEnterpriseAttestation)
            try file?.write(loaded.encoded())
        }
        if configuration.supportsEnterpriseAttestation, loaded.enterpriseAttestation == nil {
            // A state made before the key was enterprise attestation capable gets its identity now.
            loaded.enterpriseAttestation = try AttestationIdentity.newEnterpriseIdentity(
                aaguid: loaded.aaguid)
            if access == .readWrite { try file?.write(loaded.encoded()) }
        }
        if try applyConfiguredPIN(configuration, to: &loaded), access == .readWrite {
            try file?.write(loaded.encoded())
        }
        if ensurePersistentToken(configuration, in: &loaded), access == .readWrite {
            try file?.write(loaded.encoded())
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(rawRepresentation: loaded.attestationKey)
        } catch {
            throw VirtualKeyError(.stateFileCorrupt, "The state file's attestation key is not a P-256 key.")
        }
        var enterpriseKey: P256.Signing.PrivateKey?
        if configuration.supportsEnterpriseAttestation, let identity = loaded.enterpriseAttestation {
            do {
                enterpriseKey = try P256.Signing.PrivateKey(rawRepresentation: identity.key)
            } catch {
                throw VirtualKeyError(
                    .stateFileCorrupt, "The state file's enterprise attestation key is not a P-256 key.")
            }
        }
        return LoadedState(
            state: loaded, file: file, lock: lock, attestationKey: key, enterpriseAttestationKey: enterpriseKey)
    }

    /// Sets the configured PIN on a state without one; refuses a state holding another PIN.
    /// Returns whether the state changed.
    static func applyConfiguredPIN(
        _ configuration: Configuration, to state: inout VirtualKeyState
    ) throws(VirtualKeyError) -> Bool {
        guard let pin = configuration.pin else {
            guard configuration.forcePINChange, state.pinHash != nil, !state.forcePINChange else {
                return false
            }
            state.forcePINChange = true
            return true
        }
        var bytes = Array(pin.utf8)
        defer { bytes.zeroize() }
        let hash = PINPolicy.hash(bytes)
        var changed = false
        if let stored = state.pinHash {
            guard PINPolicy.same(stored, hash) else {
                throw VirtualKeyError(
                    .stateMismatch, "The state file holds another PIN than the one configured.")
            }
        } else {
            state.pinHash = hash
            state.pinLength = PINPolicy.length(bytes)
            state.pinRetries = PINPolicy.maxRetries
            changed = true
        }
        if configuration.forcePINChange && !state.forcePINChange {
            state.forcePINChange = true
            changed = true
        }
        return changed
    }

    /// Writes the state file, if there is one.
    func persist() throws(VirtualKeyError) {
        guard let stateFile else { return }
        do {
            try stateFile.write(state.encoded())
        } catch {
            logger.error("Cannot save the virtual key state", metadata: ["reason": "\(error.message)"])
            throw .rejected(.other, error.message)
        }
    }
}
