# Build stage: the official Swift image, of the Swift the README names; the versions in
# Package.resolved, and no build when it no longer matches Package.swift.
FROM swift:6.3.1-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libzmq3-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift Package.resolved ./
COPY Sources ./Sources
COPY Tests ./Tests
# Leaves test-only packages out of the build (see Package.swift).
ENV SHARED_MIRROR_RUNTIME_BUILD=1
RUN swift build --force-resolved-versions -c release --static-swift-stdlib --product broker \
    && swift build --force-resolved-versions -c release --static-swift-stdlib --product counter \
    && swift build --force-resolved-versions -c release --static-swift-stdlib --product profile \
    && swift build --force-resolved-versions -c release --static-swift-stdlib --product web \
    && mkdir /out \
    && cp "$(swift build -c release --show-bin-path)"/broker \
          "$(swift build -c release --show-bin-path)"/counter \
          "$(swift build -c release --show-bin-path)"/profile \
          "$(swift build -c release --show-bin-path)"/web /out/

# Runtime stage: slim Debian with the ZeroMQ runtime library only.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libzmq5 ca-certificates openssl \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
# For docker compose's etcd-certificates service (the ha profile).
COPY Scripts/etcd_certificates.sh /usr/local/bin/etcd-certificates
ENV SHARED_BROKER_URL=tcp://broker:5555
EXPOSE 5555 5556 8080
CMD ["broker", "--listen", "tcp://0.0.0.0:5555"]
