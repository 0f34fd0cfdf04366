package com.example.sumifixtures.violating;

import io.sumi.test.internal.DeadLetterReader;
import java.util.Map;

/** Depends on an internal package of Sumi. */
public class UsesSumiInternals {

    public DeadLetterReader deadLetters(Map<String, Object> connection) {
        return new DeadLetterReader(connection);
    }
}
