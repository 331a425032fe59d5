// SPDX-License-Identifier: Apache-2.0
/**
 * Project Reactor faces for the handoff {@link dev.handoff.Semaphore}, {@link dev.handoff.Mutex}
 * and {@link dev.handoff.RwLock}: lazy {@code Mono}/{@code Flux} operators that acquire when
 * subscribed and release exactly once on complete, error or cancel, in
 * {@link dev.handoff.reactor.ReactorSemaphores}, and {@code Mono}s of the core's
 * {@link dev.handoff.Permits} handle for callers that release elsewhere; in
 * {@link dev.handoff.reactor.ReactorAdaptive}, the sampled scoped calls of {@code handoff-adaptive}.
 * reactor-core is an optional dependency of this module: add it yourself (and
 * {@code handoff-adaptive}, to use {@code ReactorAdaptive}).
 */
@NullMarked
package dev.handoff.reactor;

import org.jspecify.annotations.NullMarked;
