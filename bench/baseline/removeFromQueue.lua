-- ======================================================================
-- BASELINE FOR THE BENCHMARK ONLY - NOT PART OF THE MATCHMAKING SYSTEM.
-- The original design's `removeFromQueue.lua`, copied verbatim (everything below the
-- line) from the blog post this project started from
-- (shared/seed/000_a218ebc0463e1ca1.txt, "Redis Lua 스크립트로 안전한 매칭 큐
-- 시스템 구축하기"). Only tools/bench runs it, in its own private
-- redis-server, to compare costs with lua/. Its known defects (O(N) LPOS,
-- string-keyed table replies, EXPIRE on the whole queue) are kept on purpose.
-- ======================================================================
-- removeFromQueue.lua
-- 사용자가 매칭 취소 시 큐에서 안전하게 제거

local queueKey = KEYS[1]
local userDataKey = KEYS[2]  
local userId = ARGV[1]

-- 🔍 큐에서 사용자 찾기
local position = redis.call('LPOS', queueKey, userId)
if not position then
    return {
        success = false,
        message = "큐에서 찾을 수 없습니다"
    }
end

-- ➖ 큐에서 제거 (LREM: 값으로 제거)
local removedCount = redis.call('LREM', queueKey, 1, userId)

-- 🗑️ 사용자 데이터도 제거
redis.call('HDEL', userDataKey, userId)

-- 📊 제거 후 상태
local remainingSize = redis.call('LLEN', queueKey)

return {
    success = removedCount > 0,
    message = removedCount > 0 and "큐에서 제거되었습니다" or "제거 실패",
    previousPosition = position + 1,
    remainingQueueSize = remainingSize
}
