-- ======================================================================
-- BASELINE FOR THE BENCHMARK ONLY - NOT PART OF THE MATCHMAKING SYSTEM.
-- The original design's `extractUsers.lua`, copied verbatim (everything below the
-- line) from the blog post this project started from
-- (shared/seed/000_a218ebc0463e1ca1.txt, "Redis Lua 스크립트로 안전한 매칭 큐
-- 시스템 구축하기"). Only tools/bench runs it, in its own private
-- redis-server, to compare costs with lua/. Its known defects (O(N) LPOS,
-- string-keyed table replies, EXPIRE on the whole queue) are kept on purpose.
-- ======================================================================
-- extractUsers.lua
-- 매칭 큐에서 정확히 3명을 원자적으로 추출하는 스크립트

local queueKey = KEYS[1]           -- 큐 키 (예: "queue:world1")
local requiredCount = tonumber(ARGV[1]) or 3  -- 필요한 인원수 (기본값: 3)

-- 🔍 현재 큐 크기 확인
local queueSize = redis.call('LLEN', queueKey)

-- ⚠️ 인원이 부족하면 즉시 종료
if queueSize < requiredCount then
    return {
        success = false,
        message = "인원 부족",
        currentCount = queueSize,
        requiredCount = requiredCount
    }
end

-- ✅ 필요한 인원만큼 사용자 추출
local extractedUsers = {}
for i = 1, requiredCount do
    local user = redis.call('RPOP', queueKey)
    if user then
        table.insert(extractedUsers, user)
    else
        -- 이론적으로는 발생할 수 없지만 안전장치
        return {
            success = false,
            message = "추출 중 오류 발생",
            extractedUsers = extractedUsers
        }
    end
end

-- 📊 추출 후 상태 정보
local remainingCount = redis.call('LLEN', queueKey)

return {
    success = true,
    extractedUsers = extractedUsers,
    remainingCount = remainingCount,
    timestamp = redis.call('TIME')[1]  -- Unix timestamp
}
