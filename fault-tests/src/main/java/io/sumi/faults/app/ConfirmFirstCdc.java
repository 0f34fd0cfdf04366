package io.sumi.faults.app;

import io.sumi.outbox.OutboxDispatcher;
import io.sumi.outbox.OutboxPublisher;
import io.sumi.outbox.OutboxRecord;
import io.sumi.outbox.PublishResult;
import io.sumi.outbox.cdc.OutboxCdc;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;

/**
 * The CDC mode's negative control ({@code fault.cdc-confirm-first=true}): a CDC path that confirms
 * each batch before the broker acknowledged it, the order a relay gets wrong when it sends in the
 * background. Its dispatcher's publisher reports every record sent as soon as it is queued, so the
 * batch is marked dispatched and the engine commits its offsets and confirms the slot at once; a
 * sender thread hands the queue to the application's real publisher every
 * {@value #FLUSH_MILLIS} ms and only logs what fails. A kill of the streaming instance loses what
 * was queued, a broker outage longer than the send timeout what was sent into it, and polling
 * cannot bring any of it back: it is marked dispatched. The guarded CDC mode runs Sumi's
 * {@link OutboxCdc} unchanged under the same faults.
 *
 * <p>The polling dispatcher (the starter's, with the real publisher) and the listeners (Sumi's)
 * are those of the guarded run, so what this run loses is the CDC path's alone.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "fault.cdc-confirm-first", havingValue = "true")
class ConfirmFirstCdc {

    static final long FLUSH_MILLIS = 250;

    private static final Logger log = LoggerFactory.getLogger(ConfirmFirstCdc.class);

    /** Replaces the starter's {@code OutboxCdc} (it backs off when one is defined). */
    @Bean
    OutboxCdc confirmFirstOutboxCdc(OutboxDispatcher dispatcher, OutboxPublisher publisher, Environment environment) {
        OutboxDispatcher confirmFirst = OutboxDispatcher.builder(dispatcher.table(), new QueueingPublisher(publisher))
                .lease(Duration.ofSeconds(10))
                .sendTimeout(Duration.ofSeconds(5))
                .build();
        log.warn("NEGATIVE CONTROL: this instance's CDC path confirms each batch before the broker's acknowledgement");
        return OutboxCdc.builder(confirmFirst, environment.getRequiredProperty("spring.datasource.url"))
                .user(environment.getProperty("spring.datasource.username"))
                .takeOverInterval(environment.getProperty(
                        "sumi.outbox.cdc.take-over-interval", Duration.class, OutboxCdc.DEFAULT_TAKE_OVER_INTERVAL))
                .build();
    }

    /** Reports every record sent when it is queued; sends the queue later, in the background. */
    static final class QueueingPublisher implements OutboxPublisher {

        private final OutboxPublisher delegate;
        private final LinkedBlockingQueue<OutboxRecord> queue = new LinkedBlockingQueue<>();

        QueueingPublisher(OutboxPublisher delegate) {
            this.delegate = delegate;
            Thread sender = new Thread(
                    () -> {
                        while (!Thread.currentThread().isInterrupted()) {
                            try {
                                TimeUnit.MILLISECONDS.sleep(FLUSH_MILLIS);
                            } catch (InterruptedException ex) {
                                return;
                            }
                            flush();
                        }
                    },
                    "confirm-first-sender");
            sender.setDaemon(true);
            sender.start();
        }

        @Override
        public PublishResult publish(List<OutboxRecord> records) {
            queue.addAll(records);
            return PublishResult.allSent();
        }

        private void flush() {
            List<OutboxRecord> batch = new ArrayList<>();
            queue.drainTo(batch);
            if (batch.isEmpty()) {
                return;
            }
            try {
                PublishResult result = delegate.publish(batch);
                if (!result.failures().isEmpty()) {
                    log.warn(
                            "confirm-first sender: {} of {} records failed, already confirmed: lost",
                            result.failures().size(),
                            batch.size());
                }
            } catch (RuntimeException ex) {
                log.warn("confirm-first sender: {} records failed, already confirmed: lost", batch.size(), ex);
            }
        }
    }
}
