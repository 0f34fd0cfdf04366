package io.sumi.conformance.rabbit;

import com.rabbitmq.client.Channel;
import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;

/** One record listener per role; the PLAIN ones without Sumi. */
public class RabbitRecordListeners {

    private final Work work;

    public RabbitRecordListeners(Work work) {
        this.work = work;
    }

    static String body(Message message) {
        return new String(message.getBody(), StandardCharsets.UTF_8);
    }

    static @Nullable String keyHeader(Message message) {
        Object key = message.getMessageProperties().getHeaders().get("idempotency-key");
        return key == null ? null : key.toString();
    }

    @RabbitListener(id = "rabbit-record-lease", queues = "cat.record.lease.${catalogue.run}", concurrency = "2")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void lease(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), false);
    }

    @RabbitListener(id = "rabbit-record-plain", queues = "cat.record.plain.${catalogue.run}", concurrency = "2")
    public void plain(Message message) {
        work.run(body(message), keyHeader(message), false);
    }

    @RabbitListener(id = "rabbit-record-held", queues = "cat.record.held.${catalogue.run}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void held(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), false);
    }

    @RabbitListener(id = "rabbit-record-plain-held", queues = "cat.record.plain-held.${catalogue.run}")
    public void plainHeld(Message message) {
        work.run(body(message), keyHeader(message), false);
    }

    @RabbitListener(id = "rabbit-record-tx", queues = "cat.record.tx.${catalogue.run}", containerFactory = "txFactory")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    public void tx(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), true);
    }

    @RabbitListener(
            id = "rabbit-record-plain-tx",
            queues = "cat.record.plain-tx.${catalogue.run}",
            containerFactory = "txFactory")
    public void plainTx(Message message) {
        work.run(body(message), keyHeader(message), true);
    }

    @RabbitListener(
            id = "rabbit-record-manual",
            queues = "cat.record.manual.${catalogue.run}",
            containerFactory = "manualFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manual(Message message, Channel channel) throws IOException {
        long tag = message.getMessageProperties().getDeliveryTag();
        if (work.nacks(body(message))) {
            if (work.scriptOf(body(message)).rejects()) {
                channel.basicReject(tag, true);
            } else {
                channel.basicNack(tag, false, true);
            }
            return;
        }
        work.run(body(message), IdempotencyContext.current().key(), false);
        channel.basicAck(tag, false);
    }

    @RabbitListener(
            id = "rabbit-record-manual-defer",
            queues = "cat.record.manual-defer.${catalogue.run}",
            containerFactory = "manualPrefetch2Factory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manualDefer(Message message, Channel channel) throws IOException {
        long tag = message.getMessageProperties().getDeliveryTag();
        String payload = body(message);
        work.run(payload, IdempotencyContext.current().key(), false);
        if (work.scriptOf(payload).defers()) {
            // Acknowledged later (a batching application): Sumi must not settle it meanwhile.
            work.deferred(payload, () -> {
                try {
                    channel.basicAck(tag, false);
                } catch (IOException | RuntimeException ex) {
                    // The channel may be gone (e.g. closed by a stale tag): nothing to settle then.
                }
            });
            return;
        }
        channel.basicAck(tag, false);
    }

    @RabbitListener(
            id = "rabbit-record-async",
            queues = "cat.record.async.${catalogue.run}",
            containerFactory = "manualFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public CompletableFuture<Void> async(Message message) {
        String key = IdempotencyContext.current().key();
        return CompletableFuture.runAsync(() -> work.run(body(message), key, false));
    }

    @RabbitListener(
            id = "rabbit-record-plain-async",
            queues = "cat.record.plain-async.${catalogue.run}",
            containerFactory = "manualFactory")
    public CompletableFuture<Void> plainAsync(Message message) {
        String key = keyHeader(message);
        return CompletableFuture.runAsync(() -> work.run(body(message), key, false));
    }

    @RabbitListener(id = "rabbit-record-stop", queues = "cat.record.stop.${catalogue.run}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void stop(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), false);
    }

    @RabbitListener(id = "rabbit-record-budget", queues = "cat.record.budget.${catalogue.run}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "rabbit-record-budget")
    public void budget(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), false);
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @RabbitListener(id = "rabbit-record-ledger-down", queues = "cat.record.ledger-down.${catalogue.run}")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(Message message) {
        work.run(body(message), IdempotencyContext.current().key(), false);
    }

    /** Every catalogue queue's dead letters, read back into {@link Work}. */
    @RabbitListener(id = "catalogue-dead-letters", queues = "cat.dlq.${catalogue.run}")
    public void deadLetter(Message message) {
        work.deadLettered(
                body(message),
                "x-first-death-reason="
                        + message.getMessageProperties().getHeaders().get("x-first-death-reason"));
    }
}
