/**
 * Puts the current message's idempotency key on outgoing HTTP calls: a
 * {@link io.sumi.consumer.http.IdempotencyKeyInterceptor} for {@code RestClient} and
 * {@code RestTemplate}, an {@link io.sumi.consumer.http.IdempotencyKeyExchangeFilter} for
 * {@code WebClient}. Needs spring-web (and spring-webflux for {@code WebClient}) on the classpath.
 */
@NullMarked
package io.sumi.consumer.http;

import org.jspecify.annotations.NullMarked;
