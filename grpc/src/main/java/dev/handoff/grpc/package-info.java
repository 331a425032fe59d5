// SPDX-License-Identifier: Apache-2.0
/**
 * Admission control for gRPC servers: {@link dev.handoff.grpc.AdmissionInterceptor} is a
 * {@link io.grpc.ServerInterceptor} over handoff-edge's {@link dev.handoff.edge.AdmissionControl}.
 * Each call takes its permits before its handler runs (waiting, if it must, without holding a
 * thread) and gives them back exactly once when it ends, however it ends; a call that cannot be
 * admitted in time is closed with {@code RESOURCE_EXHAUSTED} and a retry pushback, its handler not
 * run. {@link dev.handoff.grpc.GrpcRequest} is what the gate's cost and key functions read: the
 * method, the headers, the authority and the peer.
 *
 * <p>Nothing in this package accepts or returns {@code null} unless it is marked
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.handoff.grpc;

import org.jspecify.annotations.NullMarked;
