import CTAP2
import Testing

/// `--alg` names to COSE algorithm identifiers: the numbers are IANA's "COSE Algorithms"
/// registry's (RFC 9053, RFC 8812, RFC 8230; ML-DSA from draft-ietf-cose-dilithium).
@Suite struct COSEAlgorithmNameTests {
    @Test(arguments: [
        ("es256", -7), ("ES256", -7), ("eddsa", -8), ("ed25519", -19), ("es384", -35), ("es512", -36),
        ("ps256", -37), ("es256k", -47), ("mldsa65", -49), ("ml-dsa-65", -49), ("mldsa87", -50),
        ("ML-DSA-87", -50), ("rs256", -257), ("-65535", -65535), ("3", 3),
    ])
    func nameGivesIANANumber(_ name: String, _ number: Int) {
        #expect(COSEAlgorithm(name: name)?.rawValue == number)
    }

    @Test(arguments: ["", "es999", "rsa", "1.5", "es256 "])
    func otherTextIsNoAlgorithm(_ name: String) {
        #expect(COSEAlgorithm(name: name) == nil)
    }
}
