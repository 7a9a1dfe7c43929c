/// The wire protocol comes with the client: its messages and errors are part of its API.
@_exported public import SharedBrokerProtocol
/// `@JSONCodable`, for values that travel without Codable's containers.
@_exported public import QuickJSON
