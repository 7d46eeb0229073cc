import CSSHSecurityKeyAPI
import SSHSecurityKeyProvider

// OpenSSH's security-key middleware API (sk-api.h, version 0x000a0000): thin shims that convert
// the C arguments, call SSHSecurityKeyProvider synchronously and convert its result into
// malloc'ed structures OpenSSH frees with free(). No Swift error leaves these functions: every
// failure is an SSH_SK_ERR_* value.

/// The middleware API version.
@_cdecl("sk_api_version")
public func skAPIVersion() -> UInt32 {
    SSHSecurityKeyProvider.apiVersion
}

/// Enrols a new credential.
@_cdecl("sk_enroll")
public func skEnroll(
    _ alg: UInt32, _ challenge: UnsafePointer<UInt8>?, _ challengeLength: Int, _ application: UnsafePointer<CChar>?,
    _ flags: UInt8, _ pin: UnsafePointer<CChar>?, _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
    _ response: UnsafeMutablePointer<UnsafeMutablePointer<sk_enroll_response>?>?
) -> Int32 {
    guard let response else { return SSHSecurityKeyError.Code.general.rawValue }
    response.pointee = nil
    guard let application else { return SSHSecurityKeyError.Code.general.rawValue }
    let arguments = (
        challenge: CArguments.bytes(challenge, challengeLength), application: String(cString: application),
        pin: pin.map { String(cString: $0) }, options: CArguments.options(options)
    )
    let result = ProviderCall.run { (provider) throws(SSHSecurityKeyError) in
        try await provider.enroll(
            algorithm: SSHKeyAlgorithm(rawValue: alg), challenge: arguments.challenge,
            application: arguments.application, flags: SSHKeyFlags(rawValue: flags), pin: arguments.pin,
            options: try SSHProviderOptions(arguments.options, acceptsUser: true))
    }
    switch result {
    case .success(let enrollment):
        guard let out = CArguments.allocate(sk_enroll_response.self) else {
            return SSHSecurityKeyError.Code.general.rawValue
        }
        out.pointee = CArguments.enrollResponse(enrollment)
        response.pointee = out
        return 0
    case .failure(let error): return error.code.rawValue
    }
}

/// Signs `data` with the credential `key_handle`.
@_cdecl("sk_sign")
public func skSign(
    _ alg: UInt32, _ data: UnsafePointer<UInt8>?, _ dataLength: Int, _ application: UnsafePointer<CChar>?,
    _ keyHandle: UnsafePointer<UInt8>?, _ keyHandleLength: Int, _ flags: UInt8, _ pin: UnsafePointer<CChar>?,
    _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
    _ response: UnsafeMutablePointer<UnsafeMutablePointer<sk_sign_response>?>?
) -> Int32 {
    guard let response else { return SSHSecurityKeyError.Code.general.rawValue }
    response.pointee = nil
    guard let application else { return SSHSecurityKeyError.Code.general.rawValue }
    let arguments = (
        data: CArguments.bytes(data, dataLength), application: String(cString: application),
        keyHandle: CArguments.bytes(keyHandle, keyHandleLength), pin: pin.map { String(cString: $0) },
        options: CArguments.options(options)
    )
    let result = ProviderCall.run { (provider) throws(SSHSecurityKeyError) in
        try await provider.sign(
            algorithm: SSHKeyAlgorithm(rawValue: alg), data: arguments.data, application: arguments.application,
            keyHandle: arguments.keyHandle, flags: SSHKeyFlags(rawValue: flags), pin: arguments.pin,
            options: try SSHProviderOptions(arguments.options, acceptsUser: false))
    }
    switch result {
    case .success(let signature):
        guard let out = CArguments.allocate(sk_sign_response.self) else {
            return SSHSecurityKeyError.Code.general.rawValue
        }
        let r = CArguments.buffer(signature.r), s = CArguments.buffer(signature.s)
        out.pointee = sk_sign_response(
            flags: signature.flags, counter: signature.counter, sig_r: r.pointer, sig_r_len: r.count,
            sig_s: s.pointer, sig_s_len: s.count)
        response.pointee = out
        return 0
    case .failure(let error): return error.code.rawValue
    }
}

/// Lists the resident SSH keys on a key.
@_cdecl("sk_load_resident_keys")
public func skLoadResidentKeys(
    _ pin: UnsafePointer<CChar>?, _ options: UnsafeMutablePointer<UnsafeMutablePointer<sk_option>?>?,
    _ keys: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<sk_resident_key>?>?>?,
    _ count: UnsafeMutablePointer<Int>?
) -> Int32 {
    guard let keys, let count else { return SSHSecurityKeyError.Code.general.rawValue }
    keys.pointee = nil
    count.pointee = 0
    let arguments = (pin: pin.map { String(cString: $0) }, options: CArguments.options(options))
    let result = ProviderCall.run { (provider) throws(SSHSecurityKeyError) in
        try await provider.loadResidentKeys(
            pin: arguments.pin, options: try SSHProviderOptions(arguments.options, acceptsUser: false))
    }
    switch result {
    case .success(let found):
        guard let list = CArguments.residentKeys(found) else { return SSHSecurityKeyError.Code.general.rawValue }
        keys.pointee = list
        count.pointee = found.count
        return 0
    case .failure(let error): return error.code.rawValue
    }
}
