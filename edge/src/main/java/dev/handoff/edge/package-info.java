// SPDX-License-Identifier: Apache-2.0
/**
 * Admission control at a service's edge, for any server framework:
 * {@link dev.handoff.edge.AdmissionControl} takes each request's permits before its handler runs
 * and hands back a {@link dev.handoff.edge.Decision}: an {@link dev.handoff.edge.Admission}, whose
 * permits are given back exactly once when the response ends, or a shed request with a
 * {@link dev.handoff.edge.ShedReason} and a {@code Retry-After} hint. The limit is a
 * {@link dev.handoff.Semaphore}, a {@link dev.handoff.FairShareSemaphore} across keys, or an
 * adaptive capacity of {@code handoff-adaptive} over either.
 *
 * <p>Nothing in this package accepts or returns {@code null} unless it is marked
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.handoff.edge;

import org.jspecify.annotations.NullMarked;
