// SPDX-License-Identifier: Apache-2.0
package dev.handoff.grpc;

import io.grpc.Attributes;
import io.grpc.Grpc;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.ServerCall;
import java.net.SocketAddress;
import org.jspecify.annotations.Nullable;

/**
 * What the gate's cost and key functions see of an incoming call, before its handler runs: the
 * method, the request headers, the authority and the transport's attributes (the peer's address).
 * The gate of an {@link AdmissionInterceptor} is an {@code AdmissionControl<GrpcRequest>}, so a key
 * function can read a tenant header and a cost function weigh a method:
 *
 * <pre>{@code
 * AdmissionControl<GrpcRequest> gate = AdmissionControl.<GrpcRequest>builder()
 *         .capacity(32)
 *         .key(r -> Objects.requireNonNullElse(r.header("x-tenant"), "anonymous"), tenant -> 1)
 *         .cost(r -> r.method().getFullMethodName().equals("reports.Reports/Export") ? 8 : 1)
 *         .build();
 * }</pre>
 *
 * <p>Read it in the gate's functions only: it is not kept after the call is admitted or shed.
 */
public final class GrpcRequest {
    private final ServerCall<?, ?> call;
    private final Metadata headers;

    GrpcRequest(ServerCall<?, ?> call, Metadata headers) {
        this.call = call;
        this.headers = headers;
    }

    /**
     * Returns the method the call invokes: its full name ({@code "package.Service/Method"}), its
     * type (unary, streaming) and its marshallers.
     *
     * @return the call's method descriptor
     */
    public MethodDescriptor<?, ?> method() {
        return call.getMethodDescriptor();
    }

    /**
     * Returns the request headers as the server received them.
     *
     * @return the call's headers, not to be modified
     */
    public Metadata headers() {
        return headers;
    }

    /**
     * Returns the last value of the ASCII header {@code name} ({@code "x-tenant"}), or
     * {@code null} if the call does not carry it.
     *
     * @param name the header's name, case-insensitive; not a binary header ({@code -bin})
     * @return the value, or {@code null} if absent
     * @throws NullPointerException if {@code name} is null
     * @throws IllegalArgumentException if {@code name} is not a valid ASCII header name, or names a
     *     binary header
     */
    public @Nullable String header(String name) {
        if (name == null) {
            throw new NullPointerException("header(null): the header name is null");
        }
        if (name.endsWith(Metadata.BINARY_HEADER_SUFFIX)) {
            throw new IllegalArgumentException("header(" + name + "): a binary header; read it with headers().get(key)"
                    + " and a key of Metadata.BINARY_BYTE_MARSHALLER");
        }
        return headers.get(Metadata.Key.of(name, Metadata.ASCII_STRING_MARSHALLER));
    }

    /**
     * Returns the authority the client addressed (the {@code :authority} pseudo-header), if known.
     *
     * @return the authority, or {@code null}
     */
    public @Nullable String authority() {
        return call.getAuthority();
    }

    /**
     * Returns the address of the peer, as the transport reports it
     * ({@link Grpc#TRANSPORT_ATTR_REMOTE_ADDR}): an {@code InetSocketAddress} over Netty.
     *
     * @return the peer's address, or {@code null} if the transport does not tell
     */
    public @Nullable SocketAddress remoteAddress() {
        return call.getAttributes().get(Grpc.TRANSPORT_ATTR_REMOTE_ADDR);
    }

    /**
     * Returns the transport's attributes of the call (the peer's address, its TLS session).
     *
     * @return the call's attributes
     */
    public Attributes attributes() {
        return call.getAttributes();
    }

    /**
     * Describes the request.
     *
     * @return for example {@code "GrpcRequest[method=demo.Echo/Say, authority=localhost:8080]"}
     */
    @Override
    public String toString() {
        return "GrpcRequest[method=" + method().getFullMethodName() + ", authority=" + authority() + "]";
    }
}
