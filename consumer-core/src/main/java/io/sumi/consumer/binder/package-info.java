/**
 * What every listener binder shares, so that a guarantee is implemented once: the
 * {@link io.sumi.consumer.binder.BusyPolicy} (a busy key or a row awaiting reconciliation is held
 * and retried in place within a bound, never spending the broker's redelivery budget).
 */
@NullMarked
package io.sumi.consumer.binder;

import org.jspecify.annotations.NullMarked;
