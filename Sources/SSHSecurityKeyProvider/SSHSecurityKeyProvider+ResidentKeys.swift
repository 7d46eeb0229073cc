import Authenticators
import CTAP2
import Transport

extension SSHSecurityKeyProvider {
    /// `sk_load_resident_keys`: every resident credential whose RP ID starts with `ssh:`
    /// (in any case), read through credential management with the PIN given (none is
    /// `pinRequired`). A credential with credProtect level 3 on a key without built-in user
    /// verification comes back `userVerificationRequired`, as OpenSSH's provider marks it. A key
    /// without credential management holds none that can be listed: an empty list.
    public func loadResidentKeys(pin: String?, options: SSHProviderOptions)
        async throws(SSHSecurityKeyError) -> [SSHResidentKey]
    {
        try await reportingFailures(pinGiven: pin != nil) { () throws(SSHSecurityKeyError) in
            let deadline = Deadline.after(timeout)
            let key = try await chooseKey(device: options.device, deadline: deadline)
            let pinOnce = OneAttemptPIN(pin)
            return try await using(key, pin: pinOnce) { () throws(SSHSecurityKeyError) in
                guard pin != nil else {
                    throw SSHSecurityKeyError(.pinRequired, "Listing resident keys needs the security key's PIN.")
                }
                guard await key.supportsCredentialManagement else {
                    logger.debug("no credential management", metadata: ["device": "\(key.uri)"])
                    return []
                }
                let parties: [RelyingPartyCredentials]
                do throws(AuthenticatorError) {
                    parties = try await key.discoverableCredentials(interaction: pinOnce, deadline: deadline)
                } catch {
                    throw SSHSecurityKeyError(error)
                }
                let builtInUV = await key.info.options.isSupported(.userVerification)
                return Self.residentKeys(parties, keyHasBuiltInUV: builtInUV)
            }
        }
    }

    /// The SSH keys among `parties`' credentials.
    static func residentKeys(_ parties: [RelyingPartyCredentials], keyHasBuiltInUV: Bool) -> [SSHResidentKey] {
        var keys: [SSHResidentKey] = []
        for party in parties {
            let application = party.relyingParty.entity.id
            guard application.lowercased().hasPrefix("ssh:") else { continue }
            for credential in party.credentials {
                guard let coseAlgorithm = credential.publicKey.algorithm,
                    let algorithm = SSHKeyAlgorithm(coseAlgorithm: coseAlgorithm),
                    let publicKey = try? sshPublicKey(credential.publicKey, algorithm: algorithm)
                else { continue }
                let protected = credential.credProtect == CredentialProtectionPolicy.userVerificationRequired.rawValue
                keys.append(
                    SSHResidentKey(
                        algorithm: algorithm, application: application, publicKey: publicKey,
                        keyHandle: credential.credentialID.id,
                        flags: protected && !keyHasBuiltInUV ? .userVerificationRequired : [],
                        userID: credential.user.id))
            }
        }
        return keys
    }
}
