package io.sumi.conformance.rabbit;

import static io.sumi.conformance.rabbit.RabbitRecordListeners.body;
import static io.sumi.conformance.rabbit.RabbitRecordListeners.keyHeader;

import com.rabbitmq.client.Channel;
import io.sumi.conformance.Work;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentHandler;
import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.springframework.amqp.core.Message;
import org.springframework.amqp.rabbit.annotation.RabbitListener;

/**
 * One consumer-batch listener per role. The lease and plain roles have a second listener (lane 1,
 * the same ledger namespace) on a queue of its own: the "second consumer" of the concurrent
 * duplicates scenario.
 */
public class RabbitBatchListeners {

    private final Work work;

    public RabbitBatchListeners(Work work) {
        this.work = work;
    }

    private void runAll(List<Message> messages, boolean jdbc) {
        for (Message message : messages) {
            work.run(body(message), keyHeader(message), jdbc);
        }
    }

    @RabbitListener(
            id = "rabbit-batch-lease",
            queues = "cat.batch.lease.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void lease(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-lease-lane1",
            queues = "cat.batch.lease.lane1.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(consumer = "rabbit-batch-lease", mode = IdempotencyMode.LEASE)
    public void leaseLane1(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-plain",
            queues = "cat.batch.plain.${catalogue.run}",
            containerFactory = "batchFactory")
    public void plain(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-plain-lane1",
            queues = "cat.batch.plain.lane1.${catalogue.run}",
            containerFactory = "batchFactory")
    public void plainLane1(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-held",
            queues = "cat.batch.held.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void held(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-plain-held",
            queues = "cat.batch.plain-held.${catalogue.run}",
            containerFactory = "batchFactory")
    public void plainHeld(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-tx",
            queues = "cat.batch.tx.${catalogue.run}",
            containerFactory = "txBatchFactory")
    @IdempotentHandler(mode = IdempotencyMode.TRANSACTIONAL)
    public void tx(List<Message> messages) {
        runAll(messages, true);
    }

    @RabbitListener(
            id = "rabbit-batch-plain-tx",
            queues = "cat.batch.plain-tx.${catalogue.run}",
            containerFactory = "txBatchFactory")
    public void plainTx(List<Message> messages) {
        runAll(messages, true);
    }

    /** The ledger-down scenarios' listener: a short lease, a container they stop and start. */
    @RabbitListener(
            id = "rabbit-batch-ledger-down",
            queues = "cat.batch.ledger-down.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, lease = "3s")
    public void ledgerDown(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-manual",
            queues = "cat.batch.manual.${catalogue.run}",
            containerFactory = "manualBatchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manual(List<Message> messages, Channel channel) throws IOException {
        for (Message message : messages) {
            long tag = message.getMessageProperties().getDeliveryTag();
            if (work.nacks(body(message))) {
                if (work.scriptOf(body(message)).rejects()) {
                    channel.basicReject(tag, true);
                } else {
                    channel.basicNack(tag, false, true);
                }
                continue;
            }
            work.run(body(message), keyHeader(message), false);
            channel.basicAck(tag, false);
        }
    }

    /** Does the work of each message and acknowledges it, except those it defers (it acks them later). */
    @RabbitListener(
            id = "rabbit-batch-manual-defer",
            queues = "cat.batch.manual-defer.${catalogue.run}",
            containerFactory = "manualBatchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void manualDefer(List<Message> messages, Channel channel) throws IOException {
        for (Message message : messages) {
            long tag = message.getMessageProperties().getDeliveryTag();
            String payload = body(message);
            work.run(payload, keyHeader(message), false);
            if (work.scriptOf(payload).defers()) {
                // Acknowledged later (an application batching its acks): Sumi must not settle it meanwhile.
                work.deferred(payload, () -> {
                    try {
                        channel.basicAck(tag, false);
                    } catch (IOException | RuntimeException ex) {
                        // The channel may be gone: nothing to settle then.
                    }
                });
                continue;
            }
            channel.basicAck(tag, false);
        }
    }

    @RabbitListener(
            id = "rabbit-batch-stop",
            queues = "cat.batch.stop.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE)
    public void stop(List<Message> messages) {
        runAll(messages, false);
    }

    @RabbitListener(
            id = "rabbit-batch-budget",
            queues = "cat.batch.budget.${catalogue.run}",
            containerFactory = "batchFactory")
    @IdempotentHandler(mode = IdempotencyMode.LEASE, budget = "rabbit-batch-budget")
    public void budget(List<Message> messages) {
        runAll(messages, false);
    }

    /**
     * The control of the async row (whose Sumi cell is n/a): Spring AMQP acks a consumer batch when
     * its future succeeds and rejects it (requeue) when it fails.
     */
    @RabbitListener(
            id = "rabbit-batch-plain-async",
            queues = "cat.batch.plain-async.${catalogue.run}",
            containerFactory = "manualBatchFactory")
    public CompletableFuture<Void> plainAsync(List<Message> messages) {
        return CompletableFuture.runAsync(() -> runAll(messages, false));
    }
}
