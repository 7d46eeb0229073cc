import CSSHSecurityKeyAPI
import Glibc
import SSHSecurityKeyProvider

/// Conversions between OpenSSH's C structures and the provider's values. Everything handed to
/// OpenSSH is allocated with malloc/calloc/strdup, which OpenSSH releases with free().
enum CArguments {
    /// More options than OpenSSH ever passes (it passes at most two) is not a list to walk.
    static let maximumOptions = 64

    /// `length` bytes at `pointer` (none for a null pointer).
    static func bytes(_ pointer: UnsafePointer<UInt8>?, _ length: Int) -> [UInt8] {
        guard let pointer, length > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: pointer, count: length))
    }

    /// The NULL-terminated `sk_option` list, as (name, value, required) triples.
    static func options(_ list: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?)
        -> [(name: String, value: String, required: Bool)]
    {
        guard let list else { return [] }
        var out: [(name: String, value: String, required: Bool)] = []
        for index in 0..<maximumOptions {
            guard let option = list[index] else { break }
            let name = option.pointee.name.map { String(cString: $0) } ?? ""
            let value = option.pointee.value.map { String(cString: $0) } ?? ""
            out.append((name, value, option.pointee.required != 0))
        }
        return out
    }

    /// One zeroed `T` from calloc.
    static func allocate<T>(_ type: T.Type) -> UnsafeMutablePointer<T>? {
        calloc(1, MemoryLayout<T>.stride)?.bindMemory(to: T.self, capacity: 1)
    }

    /// A malloc'ed copy of `bytes` (a null pointer for none, as OpenSSH's provider leaves absent
    /// members).
    static func buffer(_ bytes: [UInt8]) -> (pointer: UnsafeMutablePointer<UInt8>?, count: Int) {
        guard !bytes.isEmpty, let raw = malloc(bytes.count) else { return (nil, 0) }
        let pointer = raw.bindMemory(to: UInt8.self, capacity: bytes.count)
        pointer.initialize(from: bytes, count: bytes.count)
        return (pointer, bytes.count)
    }

    /// An enrolment as `struct sk_enroll_response`.
    static func enrollResponse(_ enrollment: SSHEnrollment) -> sk_enroll_response {
        let publicKey = buffer(enrollment.publicKey), keyHandle = buffer(enrollment.keyHandle)
        let signature = buffer(enrollment.signature), certificate = buffer(enrollment.attestationCertificate)
        let authData = buffer(enrollment.authenticatorData)
        return sk_enroll_response(
            flags: enrollment.flags.rawValue, public_key: publicKey.pointer, public_key_len: publicKey.count,
            key_handle: keyHandle.pointer, key_handle_len: keyHandle.count, signature: signature.pointer,
            signature_len: signature.count, attestation_cert: certificate.pointer,
            attestation_cert_len: certificate.count, authdata: authData.pointer, authdata_len: authData.count)
    }

    /// Resident keys as a calloc'ed array of calloc'ed `struct sk_resident_key` (nil when memory
    /// ran out).
    static func residentKeys(_ keys: [SSHResidentKey]) -> UnsafeMutablePointer<UnsafeMutablePointer<sk_resident_key>?>? {
        guard
            let list = calloc(max(keys.count, 1), MemoryLayout<UnsafeMutablePointer<sk_resident_key>?>.stride)?
                .bindMemory(to: UnsafeMutablePointer<sk_resident_key>?.self, capacity: max(keys.count, 1))
        else { return nil }
        for (index, key) in keys.enumerated() {
            guard let entry = allocate(sk_resident_key.self) else { return nil }
            let publicKey = buffer(key.publicKey), keyHandle = buffer(key.keyHandle), userID = buffer(key.userID)
            entry.pointee.alg = key.algorithm.rawValue
            entry.pointee.slot = index
            entry.pointee.application = strdup(key.application)
            entry.pointee.key.public_key = publicKey.pointer
            entry.pointee.key.public_key_len = publicKey.count
            entry.pointee.key.key_handle = keyHandle.pointer
            entry.pointee.key.key_handle_len = keyHandle.count
            entry.pointee.flags = key.flags.rawValue
            entry.pointee.user_id = userID.pointer
            entry.pointee.user_id_len = userID.count
            list[index] = entry
        }
        return list
    }
}
