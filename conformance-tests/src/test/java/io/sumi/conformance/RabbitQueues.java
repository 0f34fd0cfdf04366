package io.sumi.conformance;

import org.jspecify.annotations.Nullable;
import org.springframework.amqp.core.AmqpAdmin;
import org.springframework.amqp.core.QueueInformation;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.context.SmartLifecycle;

/** What the RabbitMQ kinds' drivers (Spring AMQP and Stream) ask of a listener's container and queue. */
public final class RabbitQueues {

    private RabbitQueues() {}

    /**
     * Whether {@code container} still runs: false as soon as a stop was asked ({@code isRunning}
     * stays true while the container waits for its consumers after that).
     */
    public static boolean active(SmartLifecycle container) {
        return container instanceof AbstractMessageListenerContainer rabbit ? rabbit.isActive() : container.isRunning();
    }

    /**
     * The consumers of {@code queue}, or {@code null} when it has none: a stopped container has
     * cancelled its own.
     */
    public static @Nullable String consumers(AmqpAdmin admin, String queue) {
        QueueInformation info = admin.getQueueInfo(queue);
        if (info == null) {
            return "queue " + queue + " not found";
        }
        return info.getConsumerCount() == 0 ? null : info.getConsumerCount() + " consumer(s) of " + queue;
    }
}
