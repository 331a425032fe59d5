// SPDX-License-Identifier: Apache-2.0
/**
 * JDK Flight Recorder events for the handoff {@link dev.handoff.Semaphore}, {@link dev.handoff.Mutex}
 * and {@link dev.handoff.RwLock}: a {@link dev.handoff.jfr.JfrWaitListener} records one
 * {@code dev.handoff.SemaphoreWait} event, carrying the primitive's name, per wait longer than the
 * event's {@code waitThreshold} setting ({@link dev.handoff.jfr.WaitThreshold}).
 * No dependency beyond handoff-core and the JDK's {@code jdk.jfr} module.
 */
@NullMarked
package dev.handoff.jfr;

import org.jspecify.annotations.NullMarked;
