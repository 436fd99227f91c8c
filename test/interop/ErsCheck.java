// An independent check of our RFC 4998 evidence records with BouncyCastle's org.bouncycastle.tsp.ers
// (Debian's libbcpkix-java, BouncyCastle 1.72), run as one file by Java 11+ (test/evidence/evidence-record.test.ts):
//
//   java -cp /usr/share/java/bcprov.jar:/usr/share/java/bcpkix.jar:/usr/share/java/bcutil.jar \
//        test/interop/ErsCheck.java <record.ers> <photo file> <tsa-root.pem> [<at, ISO 8601>]
//
// `at` is when the relying party checks (default now): the simulated years-later of the renewal tests.
//
// What it checks, each with BouncyCastle's API:
// 1. ERSEvidenceRecord.validatePresent(ERSByteData(photo), at): the photo's hash (with the last
//    chain's earlier chains, after a hash-tree renewal) is in the first archive timestamp of the
//    last chain and its reduced hash tree leads to that token's imprint. Each earlier chain the
//    same way, as the record of the chains up to it (what the photo's record was before renewal).
// 2. ERSEvidenceRecord.validate(verifier): every earlier timestamp of the last chain is covered by
//    its last archive timestamp, whose token's CMS signature verifies with the TSA certificate
//    it carries (BouncyCastle checks that certificate's validity at the token's genTime).
// 3. Each archive timestamp's token: its signature (ERSArchiveTimeStamp.validate), and the TSA
//    certificate's path to the given root (java.security.cert PKIX, as of the token's genTime,
//    no revocation: the embedded TSA publishes none).
// Prints one line per check and ACCEPTED (exit 0) or REJECTED: <reason> (exit 1).
import java.io.ByteArrayInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Security;
import java.security.cert.CertPathValidator;
import java.security.cert.CertificateFactory;
import java.security.cert.PKIXParameters;
import java.security.cert.TrustAnchor;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Date;
import java.util.List;
import java.util.Set;
import org.bouncycastle.asn1.tsp.ArchiveTimeStamp;
import org.bouncycastle.asn1.tsp.ArchiveTimeStampChain;
import org.bouncycastle.asn1.tsp.ArchiveTimeStampSequence;
import org.bouncycastle.asn1.tsp.EvidenceRecord;
import org.bouncycastle.cert.X509CertificateHolder;
import org.bouncycastle.cert.jcajce.JcaX509CertificateConverter;
import org.bouncycastle.cms.jcajce.JcaSimpleSignerInfoVerifierBuilder;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.operator.DigestCalculatorProvider;
import org.bouncycastle.operator.jcajce.JcaDigestCalculatorProviderBuilder;
import org.bouncycastle.tsp.TimeStampToken;
import org.bouncycastle.tsp.ers.ERSArchiveTimeStamp;
import org.bouncycastle.tsp.ers.ERSByteData;
import org.bouncycastle.tsp.ers.ERSEvidenceRecord;

public class ErsCheck {
  public static void main(String[] args) throws Exception {
    if (args.length != 3 && args.length != 4) {
      System.err.println("usage: ErsCheck <record.ers> <photo file> <tsa-root.pem> [<at, ISO 8601>]");
      System.exit(2);
    }
    Security.addProvider(new BouncyCastleProvider());
    byte[] der = Files.readAllBytes(Path.of(args[0]));
    byte[] photo = Files.readAllBytes(Path.of(args[1]));
    X509Certificate root = (X509Certificate) CertificateFactory.getInstance("X.509").generateCertificate(new ByteArrayInputStream(Files.readAllBytes(Path.of(args[2]))));
    Date at = args.length == 4 ? Date.from(java.time.Instant.parse(args[3])) : new Date();
    DigestCalculatorProvider digests = new JcaDigestCalculatorProviderBuilder().setProvider("BC").build();
    try {
      EvidenceRecord asn1 = EvidenceRecord.getInstance(der);
      ArchiveTimeStampChain[] chains = asn1.getArchiveTimeStampSequence().getArchiveTimeStampChains();
      System.out.println("record: " + der.length + " bytes, " + chains.length + " chain(s)");
      for (int c = 0; c < chains.length; c++) {
        // The record as it stood with chains 0..c (c = last: the record itself).
        ArchiveTimeStampChain[] upTo = new ArchiveTimeStampChain[c + 1];
        System.arraycopy(chains, 0, upTo, 0, c + 1);
        EvidenceRecord prefix = new EvidenceRecord(asn1.getDigestAlgorithms(), null, null, new ArchiveTimeStampSequence(upTo));
        ERSEvidenceRecord record = new ERSEvidenceRecord(c == chains.length - 1 ? asn1 : prefix, digests);
        record.validatePresent(new ERSByteData(photo), at);
        System.out.println("chain " + c + ": validatePresent(photo) ok");
        X509CertificateHolder signer = record.getSigningCertificate();
        if (signer == null) throw new IllegalStateException("chain " + c + ": the last token carries no TSA certificate");
        record.validate(new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(signer));
        System.out.println("chain " + c + ": validate(TSA certificate " + signer.getSubject() + ") ok");
        ArchiveTimeStamp[] all = chains[c].getArchiveTimestamps();
        for (int i = 0; i < all.length; i++) {
          ERSArchiveTimeStamp ats = new ERSArchiveTimeStamp(all[i], digests);
          TimeStampToken token = ats.getTimeStampToken();
          X509CertificateHolder cert = ats.getSigningCertificate();
          if (cert == null) throw new IllegalStateException("chain " + c + " timestamp " + i + ": no TSA certificate");
          ats.validate(new JcaSimpleSignerInfoVerifierBuilder().setProvider("BC").build(cert));
          checkPath(token, cert, root);
          System.out.println("chain " + c + " timestamp " + i + ": token " + token.getTimeStampInfo().getGenTime().toInstant()
              + " signature ok, TSA certificate chains to the root as of genTime (notAfter " + cert.getNotAfter().toInstant() + ")");
        }
      }
      System.out.println("ACCEPTED");
    } catch (Exception e) {
      System.out.println("REJECTED: " + e.getClass().getSimpleName() + ": " + e.getMessage() + (e.getCause() != null ? " (" + e.getCause().getMessage() + ")" : ""));
      System.exit(1);
    }
  }

  /** PKIX path from the token's TSA certificate to the root, as of the token's genTime. */
  static void checkPath(TimeStampToken token, X509CertificateHolder leaf, X509Certificate root) throws Exception {
    JcaX509CertificateConverter conv = new JcaX509CertificateConverter().setProvider("BC");
    List<X509Certificate> path = new ArrayList<>();
    path.add(conv.getCertificate(leaf));
    @SuppressWarnings("unchecked")
    Collection<X509CertificateHolder> carried = token.getCertificates().getMatches(null);
    for (X509CertificateHolder h : carried) {
      X509Certificate x = conv.getCertificate(h);
      if (!h.equals(leaf) && !x.equals(root)) path.add(x);
    }
    PKIXParameters params = new PKIXParameters(Set.of(new TrustAnchor(root, null)));
    params.setRevocationEnabled(false);
    params.setDate(token.getTimeStampInfo().getGenTime());
    CertPathValidator.getInstance("PKIX").validate(CertificateFactory.getInstance("X.509").generateCertPath(path), params);
  }
}
