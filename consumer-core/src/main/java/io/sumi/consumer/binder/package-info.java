/**
 * The binder SPI: what a listener technology (Spring Kafka, Spring AMQP, Spring JMS, ...) tells
 * the core so that the core can apply the one implementation of Sumi's promise to its listeners.
 * A binder registers a {@link io.sumi.consumer.binder.ListenerBinder} with {@link java.util.ServiceLoader}
 * to say which {@code @IdempotentHandler} methods are its own, applies its interceptor (a
 * {@link io.sumi.consumer.binder.IdempotentHandlerInterceptorSupport}, which runs every call the
 * same way; the binder only finds the message and says how its container settles it) through an
 * {@link io.sumi.consumer.binder.IdempotentHandlerAdvisorSupport}, and holds busy keys
 * by the {@link io.sumi.consumer.binder.BusyPolicy} (a busy key or a row awaiting reconciliation
 * is held and retried in place within a bound, never spending the broker's redelivery budget). A
 * new binder touches no other binder: the core decides which binder owns a method from the
 * binders on the class path.
 */
@NullMarked
package io.sumi.consumer.binder;

import org.jspecify.annotations.NullMarked;
