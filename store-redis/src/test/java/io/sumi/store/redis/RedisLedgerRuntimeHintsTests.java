package io.sumi.store.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.support.SpringFactoriesLoader;

class RedisLedgerRuntimeHintsTests {

    @Test
    void theScriptsAreRegisteredResources() {
        RuntimeHints hints = new RuntimeHints();
        SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class)
                .forEach(registrar -> registrar.registerHints(hints, getClass().getClassLoader()));

        for (String script : new String[] {"common", "claim", "complete", "release", "release_unrun", "renew"}) {
            assertThat(RuntimeHintsPredicates.resource().forResource("io/sumi/store/redis/" + script + ".lua"))
                    .accepts(hints);
        }
    }
}
