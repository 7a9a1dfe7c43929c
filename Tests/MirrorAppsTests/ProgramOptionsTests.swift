import ArgumentParser
import CurveCommandLine
import Foundation
import MirrorApps
import SharedBroker
import Testing
import ZeroMQ

@Suite struct ProgramOptionsTests {
  /// Z85 uses "-", "=" (and other punctuation) as digits, so some of `broker keygen`'s keys
  /// begin with "-", "-=" or "--"; the flag must still take it as its value rather than as an
  /// unknown or malformed option.
  @Test(arguments: ["-", "-=", "--", "--="])
  func curveServerKeyMayBeginWithADash(prefix: String) throws {
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("client-\(UUID()).key")
    try CurveKeyPair.generate().secretKey.write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let serverKey = try prefix + CurveKeyPair.generate().publicKey.dropFirst(prefix.count)

    let options = try ProgramOptions.parse(
      CurveClientOptions.commandLine([
        "--curve-server-key", serverKey, "--curve-key-file", file.path,
      ]))
    #expect(options.curve.serverKey == serverKey)
    #expect(try options.curve.credentials()?.serverPublicKey == serverKey)
  }
}
