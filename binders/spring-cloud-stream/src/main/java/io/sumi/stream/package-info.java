/**
 * Sumi for Spring Cloud Stream: {@link io.sumi.consumer.IdempotentHandler} on functional beans
 * ({@code Consumer<Message<T>>}, {@code Consumer<T>}, {@code Function<...>}, and batch consumers
 * of {@code List<T>} or {@code Message<List<T>>}) on the Kafka and the Rabbit binder.
 *
 * <p>Two pieces work together: the {@link io.sumi.stream.IdempotentFunctionPostProcessor} wraps
 * every annotated function bean (keeping its generic type, so Spring Cloud Function still converts
 * payloads), and the {@link io.sumi.stream.SumiStreamChannelInterceptor}, a global channel
 * interceptor, shows the wrapper the message as the binder delivered it (with its key headers,
 * which a payload-only function never sees) and puts the key on the messages the function sends.
 * The Spring Boot starter registers both.
 */
@NullMarked
package io.sumi.stream;

import org.jspecify.annotations.NullMarked;
