import CTAP2
import Crypto
import Testing
@testable import WebAuthnVerification

@Suite struct ExploreTests {
    @Test func explore() throws {
        print("COUNT", ThirdPartyVectors.attestationObjects.count, ThirdPartyVectors.all.count)
        for v in ThirdPartyVectors.attestationObjects {
            let cd = ThirdPartyVectors.clientData(for: v)!
            let hash = Array(SHA256.hash(data: cd.bytes))
            do {
                let o = try AttestationObject(cbor: v.bytes)
                do {
                    let r = try o.verify(clientDataHash: hash)
                    print("RESULT OK", o.format, r.type, r.trustPath.count, v.id)
                } catch { print("RESULT FAIL", o.format, error.code, error.message, v.id) }
            } catch { print("RESULT PARSE", error, v.id) }
        }
    }
}
