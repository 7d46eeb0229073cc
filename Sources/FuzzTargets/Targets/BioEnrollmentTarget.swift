import CBOR
import CTAP2

extension FuzzTarget {
    /// authenticatorBioEnrollment responses (CTAP 2.1 §6.7): what parses stays within the
    /// response's limits, parses the same twice, and its sample feedback and sensor kind have
    /// names and advice for the user.
    static let bioEnrollment = FuzzTarget("bio-enrollment", "authenticatorBioEnrollment responses") {
        bytes throws(FuzzPropertyViolation) in
        guard let response = try? BioEnrollmentResponse(cbor: bytes) else { return }
        try expect(
            (try? BioEnrollmentResponse(cbor: bytes)) == response,
            "a bioEnrollment response parses differently twice")
        let limit = BioEnrollmentResponse.Limit.self
        try expect(
            (response.templateInfos?.count ?? 0) <= limit.templates, "more templates than the limit parsed")
        try expect(
            (response.templateInfos ?? []).allSatisfy {
                !$0.id.isEmpty && $0.id.count <= BioEnrollmentRequest.maxTemplateIDLength
                    && ($0.friendlyName?.utf8.count ?? 0) <= limit.friendlyName
            }, "a template outside the ID or name limits parsed")
        try expect(
            (response.remainingSamples ?? 0) <= limit.samples
                && (response.maxCaptureSamplesRequiredForEnroll ?? 0) <= limit.samples,
            "a sample count over the limit parsed")
        if let status = response.lastEnrollSampleStatus {
            try expect(
                !status.name.isEmpty && !status.advice.isEmpty, "a sample status without a name or advice")
            try expect(status.isGood == (status.rawValue == 0), "a sample status good for another value")
            try expect(status.description == status.name, "a sample status described by another name")
        }
        if let kind = response.fingerprintKind {
            try expect(!kind.description.isEmpty, "a fingerprint kind without a description")
        }
    }
}
