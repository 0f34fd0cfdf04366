package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.ClaimRequest;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The executor observes every handled message with the low-cardinality tags consumer, mode and
 * outcome, so a trace shows a duplicate or a busy retry for what it is; the handler runs inside
 * the observation's scope (its own spans are children of Sumi's).
 */
class MessageHandlingObservationTests extends H2ExecutorTestSupport {

    private final List<Observation.Context> stopped = new CopyOnWriteArrayList<>();
    private final ObservationRegistry observations = ObservationRegistry.create();

    @BeforeEach
    void observe() {
        observations.observationConfig().observationHandler(new ObservationHandler<>() {
            @Override
            public void onStop(Observation.Context context) {
                stopped.add(context);
            }

            @Override
            public boolean supportsContext(Observation.Context context) {
                return true;
            }
        });
        executor = IdempotentExecutor.builder(store)
                .transactionSupport(TransactionSupport.of(transactionManager))
                .observationRegistry(observations)
                .build();
    }

    private static Map<String, String> tags(Observation.Context context) {
        Map<String, String> tags = new TreeMap<>();
        for (KeyValue keyValue : context.getLowCardinalityKeyValues()) {
            tags.put(keyValue.getKey(), keyValue.getValue());
        }
        return tags;
    }

    @Test
    void eachMessageIsObservedWithItsConsumerModeAndOutcome() throws Exception {
        Observation[] inHandler = new Observation[1];
        executor.execute(lease(), message("a"), () -> {
            inHandler[0] = observations.getCurrentObservation();
            return null;
        });
        executor.execute(lease(), message("a"), () -> null);
        store.claim(consumer, new ClaimRequest("held", null), LEASE);
        assertThatThrownBy(() -> executor.execute(lease(), message("held"), () -> null))
                .isInstanceOf(MessageBusyException.class);
        assertThatThrownBy(() -> executor.execute(transactional(), message("b"), () -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");

        assertThat(stopped)
                .extracting(MessageHandlingObservationTests::tags)
                .containsExactly(
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "processed"),
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "duplicate"),
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "busy"),
                        Map.of("consumer", consumer, "mode", "transactional", "outcome", "failed"));
        assertThat(stopped).allSatisfy(context -> {
            assertThat(context.getName()).isEqualTo("sumi.message.handling");
            assertThat(context.getContextualName()).isEqualTo("sumi " + consumer);
        });
        assertThat(stopped.get(2).getError()).isInstanceOf(MessageBusyException.class);
        assertThat(stopped.get(3).getError()).hasMessage("boom");
        assertThat(inHandler[0])
                .as("the handler runs in the observation's scope")
                .isNotNull();
        assertThat(inHandler[0].getContext()).isSameAs(stopped.get(0));
    }

    @Test
    void aBatchIsObservedOnce() throws Exception {
        executor.executeBatch(lease(), List.of(message("x"), message("y")), indexes -> {});
        executor.executeBatch(lease(), List.of(message("x"), message("y")), indexes -> {});

        assertThat(stopped)
                .extracting(context -> tags(context).get("outcome"))
                .containsExactly("processed", "duplicate");
    }

    /**
     * Issue 19, A6: the records of a claimed poll ({@code sumi.kafka.poll-claim}) are observed as
     * every other handled message (docs/tracing.md); before, the poll claim's path recorded
     * {@code sumi.messages} but started no observation.
     */
    @Test
    void eachRecordOfAClaimedPollIsObservedWithItsOutcome() throws Exception {
        PollClaim poll = executor.claimPoll(lease(), List.of(message("p0"), message("p1"), message("p0")));
        assertThat(poll).isNotNull();
        Observation[] inHandler = new Observation[1];
        poll.execute(0, () -> {
            inHandler[0] = observations.getCurrentObservation();
            return null;
        });
        assertThatThrownBy(() -> poll.execute(1, () -> {
                    throw new IllegalStateException("boom");
                }))
                .hasMessage("boom");
        poll.execute(2, () -> null);
        poll.completePending();
        poll.releaseUnrun();

        assertThat(stopped)
                .extracting(MessageHandlingObservationTests::tags)
                .containsExactly(
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "processed"),
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "failed"),
                        Map.of("consumer", consumer, "mode", "lease", "outcome", "duplicate"));
        assertThat(inHandler[0])
                .as("the handler runs in the observation's scope")
                .isNotNull();
        assertThat(inHandler[0].getContext().getName()).isEqualTo("sumi.message.handling");
    }
}
