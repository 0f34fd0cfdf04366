/**
 * The outbox's RabbitMQ publisher (needs {@code spring-rabbit} on the class path): publisher
 * confirms, mandatory routing, the outbox headers. See docs/rabbitmq.md.
 */
@NullMarked
package io.sumi.outbox.rabbit;

import org.jspecify.annotations.NullMarked;
