// SPDX-License-Identifier: Apache-2.0
/**
 * Admission control for Jakarta servlet containers (Servlet 6.0 and 6.1):
 * {@link dev.handoff.servlet.AdmissionFilter} takes each request's permits from a
 * {@link dev.handoff.edge.AdmissionControl} before the filter chain runs, waits for them without
 * holding a container thread where the request supports async, sheds with {@code 503} and
 * {@code Retry-After}, and gives them back exactly once when the response ends.
 *
 * <p>Nothing in this package accepts or returns {@code null} unless it is marked
 * {@link org.jspecify.annotations.Nullable @Nullable}.
 */
@NullMarked
package dev.handoff.servlet;

import org.jspecify.annotations.NullMarked;
