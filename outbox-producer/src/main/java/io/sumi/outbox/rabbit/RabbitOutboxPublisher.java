package io.sumi.outbox.rabbit;

import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.core.MessageDeliveryMode;
import org.springframework.amqp.core.MessageProperties;
import org.springframework.amqp.core.ReturnedMessage;
import org.springframework.amqp.rabbit.connection.CachingConnectionFactory;
import org.springframework.amqp.rabbit.connection.ConnectionFactory;
import org.springframework.amqp.rabbit.connection.CorrelationData;
import org.springframework.amqp.rabbit.core.RabbitTemplate;

/**
 * Publishes outbox rows to RabbitMQ: to the exchange and routing key its topic is routed to
 * ({@link RabbitDestination}; by default the exchange named like the topic, routing key = the
 * aggregate id), body = the payload (UTF-8), headers = {@code outbox-id} ({@link io.sumi.outbox.OutboxHeaders})
 * and the appended headers,
 * {@code message-id} = the outbox id, persistent delivery mode, {@code timestamp} = when the row
 * was appended.
 *
 * <p>A row counts as sent only when RabbitMQ has <em>confirmed</em> it (publisher confirms) and
 * has not <em>returned</em> it: every message is published {@code mandatory}, so a message its
 * exchange routes to no queue comes back and fails the row ({@link UnroutableMessageException})
 * instead of being dropped in silence. A negative confirm (a nack, a channel closed by an unknown
 * exchange) fails the row too. Confirms of persistent messages to durable queues come after the
 * broker has written them, so "confirmed" means durably accepted, as {@code acks=all} for Kafka.
 *
 * <p>A batch is published on one channel ({@link RabbitTemplate#invoke}), so its rows reach each
 * queue in id order (the dispatcher holds an aggregate's next row back until the earlier one is
 * sent). Deadline: rows whose turn comes after the deadline are not published and are reported as
 * failed; rows without a confirm by the deadline are reported as failed (they may still arrive: a
 * row reported as failed is sent again later, and consumers dedup it by its {@code outbox-id}).
 *
 * <p>The connection factory must have correlated publisher confirms and publisher returns on
 * ({@link #create(ConnectionFactory, Function, Duration)} checks it;
 * {@link #connectionFactory(com.rabbitmq.client.ConnectionFactory)} makes one). Thread-safe.
 */
public final class RabbitOutboxPublisher implements OutboxPublisher, AutoCloseable {

    /** Default bound on waiting for a batch's confirms. */
    public static final Duration DEFAULT_SEND_TIMEOUT = Duration.ofSeconds(30);

    /** The default content type of the messages: the payload is text. */
    public static final String DEFAULT_CONTENT_TYPE = MessageProperties.CONTENT_TYPE_TEXT_PLAIN;

    private final RabbitTemplate template;
    private final Function<String, RabbitDestination> routes;
    private final Duration sendTimeout;
    private final String contentType;
    private final @Nullable CachingConnectionFactory owned;
    private volatile boolean closed;

    private RabbitOutboxPublisher(
            ConnectionFactory connectionFactory,
            Function<String, RabbitDestination> routes,
            Duration sendTimeout,
            String contentType,
            @Nullable CachingConnectionFactory owned) {
        this.routes = Objects.requireNonNull(routes, "routes");
        this.sendTimeout = positive(sendTimeout);
        this.contentType = Objects.requireNonNull(contentType, "contentType");
        this.owned = owned;
        this.template = new RabbitTemplate(connectionFactory);
        // Mandatory: an unroutable message comes back (and fails its row) instead of vanishing.
        this.template.setMandatory(true);
    }

    /**
     * A publisher on {@code connectionFactory}, which must have correlated publisher confirms and
     * publisher returns on.
     *
     * @param routes the destination of each topic (see {@link #routes(Map)})
     * @throws IllegalArgumentException if the connection factory has confirms or returns off
     */
    public static RabbitOutboxPublisher create(
            ConnectionFactory connectionFactory, Function<String, RabbitDestination> routes, Duration sendTimeout) {
        return create(connectionFactory, routes, sendTimeout, DEFAULT_CONTENT_TYPE);
    }

    /** As {@link #create(ConnectionFactory, Function, Duration)}, with the messages' content type. */
    public static RabbitOutboxPublisher create(
            ConnectionFactory connectionFactory,
            Function<String, RabbitDestination> routes,
            Duration sendTimeout,
            String contentType) {
        check(connectionFactory);
        return new RabbitOutboxPublisher(connectionFactory, routes, sendTimeout, contentType, null);
    }

    /**
     * A publisher on a connection factory of its own ({@link #connectionFactory}) made from the
     * RabbitMQ client's {@code connectionFactory} (host, port, credentials, virtual host, TLS),
     * closed with the publisher.
     */
    public static RabbitOutboxPublisher create(
            com.rabbitmq.client.ConnectionFactory connectionFactory,
            Function<String, RabbitDestination> routes,
            Duration sendTimeout,
            String contentType) {
        return createOwning(new CachingConnectionFactory(connectionFactory), routes, sendTimeout, contentType);
    }

    /**
     * A publisher on {@code connectionFactory}, a connection factory for the outbox alone, set up
     * elsewhere (its addresses, virtual host, credentials, TLS: e.g. by Spring Boot's configurers
     * from {@code spring.rabbitmq.*}); the publisher turns correlated publisher confirms and
     * publisher returns on, names its connections {@code sumi-outbox}, and closes it with itself.
     *
     * @since 0.1.0
     */
    public static RabbitOutboxPublisher createOwning(
            CachingConnectionFactory connectionFactory,
            Function<String, RabbitDestination> routes,
            Duration sendTimeout,
            String contentType) {
        CachingConnectionFactory own = forOutbox(connectionFactory);
        return new RabbitOutboxPublisher(own, routes, sendTimeout, contentType, own);
    }

    /**
     * A Spring AMQP connection factory for the outbox on the RabbitMQ client's {@code connectionFactory}:
     * correlated publisher confirms and publisher returns on, connections named {@code sumi-outbox}.
     * It connects to the client's one host and port: for a list of addresses, set them on a
     * {@link CachingConnectionFactory} and use {@link #createOwning}.
     */
    public static CachingConnectionFactory connectionFactory(com.rabbitmq.client.ConnectionFactory connectionFactory) {
        return forOutbox(new CachingConnectionFactory(connectionFactory));
    }

    private static CachingConnectionFactory forOutbox(CachingConnectionFactory factory) {
        factory.setPublisherConfirmType(CachingConnectionFactory.ConfirmType.CORRELATED);
        factory.setPublisherReturns(true);
        factory.setConnectionNameStrategy(f -> "sumi-outbox");
        return factory;
    }

    /**
     * Routes: the destination configured for a topic, else {@link RabbitDestination#forTopic the default}.
     */
    public static Function<String, RabbitDestination> routes(Map<String, RabbitDestination> byTopic) {
        Map<String, RabbitDestination> copy = Map.copyOf(byTopic);
        return topic -> copy.getOrDefault(topic, RabbitDestination.forTopic(topic));
    }

    private static void check(ConnectionFactory connectionFactory) {
        if (!connectionFactory.isPublisherConfirms() || !connectionFactory.isPublisherReturns()) {
            throw new IllegalArgumentException(
                    "The outbox's RabbitMQ connection factory must have correlated publisher confirms"
                            + " and publisher returns on (confirms: " + connectionFactory.isPublisherConfirms()
                            + ", returns: "
                            + connectionFactory.isPublisherReturns()
                            + "): without confirms a row would be marked dispatched before"
                            + " RabbitMQ took it, without returns an unroutable message would be dropped in silence. Use"
                            + " RabbitOutboxPublisher.connectionFactory(...), or set confirm type CORRELATED and publisher returns");
        }
    }

    private static Duration positive(Duration timeout) {
        Objects.requireNonNull(timeout, "sendTimeout");
        if (timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("The send timeout must be positive, was " + timeout);
        }
        return timeout;
    }

    /** {@link #publish(List, Duration)} with the whole send timeout. */
    @Override
    public PublishResult publish(List<OutboxRecord> records) {
        return publish(records, sendTimeout);
    }

    @Override
    public PublishResult publish(List<OutboxRecord> records, Duration timeout) {
        if (closed) {
            throw new IllegalStateException("The RabbitMQ outbox publisher is closed");
        }
        Duration budget = timeout.compareTo(sendTimeout) < 0 ? timeout : sendTimeout;
        long deadline = System.nanoTime() + budget.toNanos();
        Map<Long, CorrelationData> confirms = new LinkedHashMap<>();
        Map<Long, Throwable> failures = new LinkedHashMap<>();
        try {
            // One channel for the whole batch: its messages reach each queue in id order.
            template.invoke(operations -> {
                for (OutboxRecord record : records) {
                    if (System.nanoTime() - deadline >= 0) {
                        failures.put(
                                record.id(),
                                new TimeoutException(
                                        "Not sent: the batch's send timeout (" + budget + ") ran out before its turn"));
                        continue;
                    }
                    RabbitDestination destination = routes.apply(record.topic());
                    CorrelationData correlation = new CorrelationData(record.outboxId());
                    operations.send(
                            destination.exchange(),
                            destination.routingKey(record.aggregateId()),
                            toMessage(record),
                            correlation);
                    confirms.put(record.id(), correlation);
                }
                return Boolean.TRUE; // invoke() needs an answer; the confirms above are the result
            });
        } catch (RuntimeException ex) {
            // The connection or channel failed: the rows not handed over yet fail with it.
            for (OutboxRecord record : records) {
                if (!confirms.containsKey(record.id())) {
                    failures.putIfAbsent(record.id(), ex);
                }
            }
        }
        for (Map.Entry<Long, CorrelationData> entry : confirms.entrySet()) {
            CorrelationData correlation = entry.getValue();
            try {
                CorrelationData.Confirm confirm =
                        correlation.getFuture().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                ReturnedMessage returned = correlation.getReturned();
                if (!confirm.ack()) {
                    failures.put(
                            entry.getKey(),
                            new IllegalStateException("RabbitMQ did not confirm it (nack): " + confirm.reason()));
                } else if (returned != null) {
                    failures.put(
                            entry.getKey(),
                            new UnroutableMessageException(
                                    "Returned by RabbitMQ as unroutable (" + returned.getReplyCode() + " "
                                            + returned.getReplyText() + "): exchange '" + returned.getExchange()
                                            + "' routes routing key '" + returned.getRoutingKey()
                                            + "' to no queue; bind a queue, or route the topic elsewhere"));
                }
            } catch (ExecutionException ex) {
                failures.put(entry.getKey(), ex.getCause() != null ? ex.getCause() : ex);
            } catch (TimeoutException ex) {
                failures.put(entry.getKey(), new TimeoutException("No confirm from RabbitMQ within " + budget));
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                failures.put(entry.getKey(), ex);
            }
        }
        return failures.isEmpty() ? PublishResult.allSent() : PublishResult.failed(failures);
    }

    private Message toMessage(OutboxRecord record) {
        MessageProperties properties = new MessageProperties();
        properties.setContentType(contentType);
        properties.setContentEncoding(StandardCharsets.UTF_8.name());
        properties.setDeliveryMode(MessageDeliveryMode.PERSISTENT);
        properties.setMessageId(record.outboxId());
        properties.setTimestamp(Date.from(record.createdAt()));
        Map<String, Object> headers = new HashMap<>(record.brokerHeaders());
        headers.forEach(properties::setHeader);
        return new Message(record.payload().getBytes(StandardCharsets.UTF_8), properties);
    }

    /** The bound on sending one batch. */
    public Duration sendTimeout() {
        return sendTimeout;
    }

    /** Closes the connection factory if the publisher made it. */
    @Override
    public void close() {
        closed = true;
        if (owned != null) {
            owned.destroy();
        }
    }
}
