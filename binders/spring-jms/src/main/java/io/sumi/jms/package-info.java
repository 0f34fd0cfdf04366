/**
 * Sumi for Spring JMS: {@link io.sumi.consumer.IdempotentHandler} on {@code @JmsListener} methods,
 * whatever their parameter style, with transacted sessions or client acknowledgement, dead
 * letters, budget stops and key passthrough on {@code JmsTemplate} sends. See docs/jms.md.
 */
@NullMarked
package io.sumi.jms;

import org.jspecify.annotations.NullMarked;
