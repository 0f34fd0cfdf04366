/**
 * Sumi for Spring AMQP: {@link io.sumi.consumer.IdempotentHandler} on {@code @RabbitListener}
 * record and batch listeners, whatever their parameter style, AUTO and MANUAL acknowledgement,
 * budget stops and key passthrough on {@code RabbitTemplate} sends. See docs/rabbitmq.md.
 */
@NullMarked
package io.sumi.rabbit;

import org.jspecify.annotations.NullMarked;
