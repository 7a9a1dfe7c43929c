import Foundation
internal import NIOSSL

/// How an ``EtcdClient`` speaks TLS to etcd: the certificate authority it trusts for the
/// members' certificates and, for a cluster that checks its clients (`--client-cert-auth`), the
/// client's own certificate and key. The files are etcdctl's `--cacert`, `--cert` and `--key`.
public struct EtcdTLS: Sendable, Equatable {
  /// The PEM file of the certificate authority that signed the members' certificates.
  public var caCertificateFile: String
  /// The PEM file of this client's certificate, if etcd checks client certificates.
  public var certificateFile: String?
  /// The PEM file of this client's private key, with ``certificateFile``.
  public var privateKeyFile: String?

  /// TLS settings from their files.
  ///
  /// - Parameters:
  ///   - caCertificateFile: The certificate authority to trust (PEM).
  ///   - certificateFile: This client's certificate (PEM), or `nil`.
  ///   - privateKeyFile: This client's private key (PEM), or `nil`.
  public init(caCertificateFile: String, certificateFile: String? = nil, privateKeyFile: String? = nil) {
    self.caCertificateFile = caCertificateFile
    self.certificateFile = certificateFile
    self.privateKeyFile = privateKeyFile
  }

  /// The configuration for async-http-client, with every file read now.
  ///
  /// - Throws: ``EtcdTLSError`` naming the file that cannot be used.
  func configuration() throws(EtcdTLSError) -> TLSConfiguration {
    var configuration = TLSConfiguration.makeClientConfiguration()
    configuration.trustRoots = .certificates(
      try Self.read(caCertificateFile) { try NIOSSLCertificate.fromPEMFile($0) })
    if let certificateFile {
      configuration.certificateChain = try Self.read(certificateFile) {
        try NIOSSLCertificate.fromPEMFile($0).map { .certificate($0) }
      }
    }
    if let privateKeyFile {
      configuration.privateKey = .privateKey(
        try Self.read(privateKeyFile) { try NIOSSLPrivateKey(file: $0, format: .pem) })
    }
    return configuration
  }

  private static func read<T>(_ path: String, _ load: (String) throws -> T) throws(EtcdTLSError)
    -> T
  {
    guard FileManager.default.isReadableFile(atPath: path) else {
      throw EtcdTLSError(path: path, reason: "no such file, or not readable")
    }
    do {
      let loaded = try load(path)
      if let list = loaded as? [Any], list.isEmpty {
        throw EtcdTLSError(path: path, reason: "holds no PEM certificate")
      }
      return loaded
    } catch let error as EtcdTLSError {
      throw error
    } catch {
      throw EtcdTLSError(path: path, reason: "not a PEM file of the expected kind (\(error))")
    }
  }
}

/// A TLS file for etcd that cannot be used.
public struct EtcdTLSError: Error, Equatable, CustomStringConvertible {
  /// The file.
  public let path: String
  /// What is wrong with it.
  public let reason: String

  /// `"PATH": REASON`.
  public var description: String { "\(String(reflecting: path)): \(reason)" }
}
