// Registers and signs in with the library's own virtual key, in process, through the provider
// API, and verifies the registration as a relying party would: everything through products.
import CTAP2
import Foundation
import SecurityKeys
import VirtualAuthenticator
import WebAuthnVerification

let key = try VirtualKey()
let controller = SecurityKeyAuthorizationController(sources: [.connection(InProcessConnection(handler: key))])
let provider = SecurityKeyCredentialProvider(relyingPartyIdentifier: "example.org")
let challenge: [UInt8] = Array(0..<32)
let registration = try await controller.performRegistration(
    provider.createCredentialRegistrationRequest(
        challenge: challenge, displayName: "Consumer", name: "consumer", userID: [1, 2, 3]))
let verified = try await RegistrationVerifier(
    policy: RelyingPartyPolicy(relyingPartyID: "example.org", origins: ["https://example.org"], challenge: challenge)
).verify(
    RegistrationResponse(
        id: nil, clientData: .json(registration.rawClientDataJSON ?? []),
        attestationObject: try AttestationObject(cbor: registration.rawAttestationObject)))
var signIn = provider.createCredentialAssertionRequest(challenge: challenge)
signIn.allowedCredentials = [SecurityKeyCredentialDescriptor(credentialID: registration.credentialID)]
let assertion = try await controller.performAssertion(signIn)
guard assertion.credentialID == registration.credentialID, verified.credentialRecord.id == registration.credentialID
else {
    print("consumer: the sign-in used another credential")
    exit(1)
}
print("consumer: registered and signed in through the products (format \(verified.attestationFormat))")
